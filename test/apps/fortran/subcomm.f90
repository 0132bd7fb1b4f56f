! subcomm: collectives on the rows and columns of a process grid, as in 2-D decomposed linear
! algebra (SUMMA, ScaLAPACK).
! The Fortran twin of c/subcomm.c, which describes it; the same calls and the same checksum.
!
! -n SIZE  elements per rank: rank r holds n + r%3 (default 100)
program subcomm
  use mpi
  use counts
  use app_common
  implicit none
  type(options) :: o
  integer :: ierr, rank, nranks, py, px, row, col, p, k, neven, total, m, it
  integer :: dims(2), rowcomm, colcomm, cart, cartrow, world, evens, all, even
  integer, allocatable :: members(:), counts(:), displs(:)
  logical :: periods(2), keep_columns(2)
  real(dp), allocatable :: data(:), v(:), rowsums(:)
  real(dp) :: s, local, colsum, checksum

  o = options(name='subcomm', size_help='elements per rank (plus rank%3)', n=100)
  call app_begin(o, rank, nranks)

  dims = 0
  periods = .false.
  keep_columns = [.false., .true.]
  call MPI_Dims_create(nranks, 2, dims, ierr)
  py = dims(1)
  px = dims(2)
  row = rank / px
  col = mod(rank, px)

  call count_call('MPI_Comm_split'); call MPI_Comm_split(MPI_COMM_WORLD, row, col, rowcomm, ierr)
  call count_call('MPI_Comm_split'); call MPI_Comm_split(MPI_COMM_WORLD, col, row, colcomm, ierr)
  call count_call('MPI_Cart_create')
  call MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, .false., cart, ierr)
  call count_call('MPI_Cart_sub'); call MPI_Cart_sub(cart, keep_columns, cartrow, ierr)
  call count_call('MPI_Comm_dup'); call MPI_Comm_dup(MPI_COMM_WORLD, world, ierr)

  allocate (members(0:nranks - 1))
  neven = 0
  do p = 0, nranks - 1, 2
    members(neven) = p
    neven = neven + 1
  end do
  call MPI_Comm_group(MPI_COMM_WORLD, all, ierr)
  call MPI_Group_incl(all, neven, members, even, ierr)
  call count_call('MPI_Comm_create')
  call MPI_Comm_create(MPI_COMM_WORLD, even, evens, ierr)  ! MPI_COMM_NULL on odd ranks
  call MPI_Group_free(even, ierr)
  call MPI_Group_free(all, ierr)

  ! Rank 0 makes the data and scatters it: rank p gets counts(p) = n + p%3 elements.
  allocate (counts(0:nranks - 1), displs(0:nranks - 1))
  total = 0
  do p = 0, nranks - 1
    counts(p) = o%n + mod(p, 3)
    displs(p) = total
    total = total + counts(p)
  end do
  if (rank == 0) then
    allocate (data(0:total - 1))
    do k = 0, total - 1
      data(k) = 1.0_dp + 1e-3_dp * mod(k, 100)
    end do
  else
    allocate (data(0:0))  ! not used off the root
  end if
  m = counts(rank)
  allocate (v(0:m - 1), rowsums(0:px - 1))
  call count_call('MPI_Scatterv')
  call MPI_Scatterv(data, counts, displs, MPI_DOUBLE_PRECISION, v, m, MPI_DOUBLE_PRECISION, 0, &
                    world, ierr)

  do it = 0, o%iters - 1
    s = v(0)
    call count_call('MPI_Bcast'); call MPI_Bcast(s, 1, MPI_DOUBLE_PRECISION, 0, rowcomm, ierr)
    do k = 0, m - 1
      v(k) = 0.9_dp * v(k) + 0.1_dp * s
    end do

    local = add_up(v)
    colsum = 0
    call count_call('MPI_Reduce')
    call MPI_Reduce(local, colsum, 1, MPI_DOUBLE_PRECISION, MPI_SUM, 0, colcomm, ierr)
    if (row == 0) v(m - 1) = 0.5_dp * v(m - 1) + 0.5_dp * colsum / (py * m)

    call count_call('MPI_Allgather')
    call MPI_Allgather(local, 1, MPI_DOUBLE_PRECISION, rowsums, 1, MPI_DOUBLE_PRECISION, &
                       cartrow, ierr)
    do k = 0, m - 1
      v(k) = 0.99_dp * v(k) + 0.01_dp * rowsums(mod(k, px)) / m
    end do

    v(0) = burn(o%work, v(0))
  end do

  if (evens /= MPI_COMM_NULL) then
    call count_call('MPI_Barrier'); call MPI_Barrier(evens, ierr)
  end if
  call count_call('MPI_Gatherv')
  call MPI_Gatherv(v, m, MPI_DOUBLE_PRECISION, data, counts, displs, MPI_DOUBLE_PRECISION, 0, &
                   world, ierr)
  checksum = 0
  if (rank == 0) then
    do k = 0, total - 1
      checksum = checksum + (1 + mod(k, 7)) * data(k)
    end do
  end if
  call report(o, rank, nranks, checksum)

  if (evens /= MPI_COMM_NULL) then
    call count_call('MPI_Comm_free'); call MPI_Comm_free(evens, ierr)
  end if
  call count_call('MPI_Comm_free'); call MPI_Comm_free(world, ierr)
  call count_call('MPI_Comm_free'); call MPI_Comm_free(cartrow, ierr)
  call count_call('MPI_Comm_free'); call MPI_Comm_free(cart, ierr)
  call count_call('MPI_Comm_free'); call MPI_Comm_free(colcomm, ierr)
  call count_call('MPI_Comm_free'); call MPI_Comm_free(rowcomm, ierr)
  call finish(o, rank, 0)
end program subcomm
