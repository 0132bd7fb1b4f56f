! ring: a vector travels around a ring of ranks in every point-to-point send mode.
! The Fortran twin of c/ring.c, which describes it; the same calls and the same checksum.
!
! -n SIZE  doubles per message (default 1000)
program ring
  use mpi
  use counts
  use app_common
  implicit none
  type(options) :: o
  integer :: ierr, rank, nranks, n, right, left, it, k, p, bsize, req
  integer, parameter :: comm = MPI_COMM_WORLD
  real(dp), allocatable :: x(:), sums(:), bbuf(:)
  real(dp), allocatable, asynchronous :: r(:)
  real(dp) :: local, checksum

  o = options(name='ring', size_help='doubles per message', n=1000)
  call app_begin(o, rank, nranks)

  n = o%n
  right = mod(rank + 1, nranks)
  left = mod(rank - 1 + nranks, nranks)
  allocate (x(0:n - 1), r(0:n - 1), sums(0:nranks - 1))
  do k = 0, n - 1
    x(k) = rank + 1e-3_dp * k
  end do

  bsize = 2 * (n * 8 + MPI_BSEND_OVERHEAD)
  allocate (bbuf(bsize / 8 + 1))
  call MPI_Buffer_attach(bbuf, bsize, ierr)

  do it = 0, o%iters - 1
    if (nranks > 1) then
      ! 1. standard mode
      if (mod(rank, 2) == 0) then
        call count_call('MPI_Send'); call MPI_Send(x, n, MPI_DOUBLE_PRECISION, right, 1, comm, ierr)
        call count_call('MPI_Recv')
        call MPI_Recv(r, n, MPI_DOUBLE_PRECISION, left, 1, comm, MPI_STATUS_IGNORE, ierr)
      else
        call count_call('MPI_Recv')
        call MPI_Recv(r, n, MPI_DOUBLE_PRECISION, left, 1, comm, MPI_STATUS_IGNORE, ierr)
        call count_call('MPI_Send'); call MPI_Send(x, n, MPI_DOUBLE_PRECISION, right, 1, comm, ierr)
      end if
      x = 0.5_dp * (x + r)

      ! 2. synchronous mode
      if (mod(rank, 2) == 0) then
        call count_call('MPI_Ssend')
        call MPI_Ssend(x, n, MPI_DOUBLE_PRECISION, right, 2, comm, ierr)
        call count_call('MPI_Recv')
        call MPI_Recv(r, n, MPI_DOUBLE_PRECISION, left, 2, comm, MPI_STATUS_IGNORE, ierr)
      else
        call count_call('MPI_Recv')
        call MPI_Recv(r, n, MPI_DOUBLE_PRECISION, left, 2, comm, MPI_STATUS_IGNORE, ierr)
        call count_call('MPI_Ssend')
        call MPI_Ssend(x, n, MPI_DOUBLE_PRECISION, right, 2, comm, ierr)
      end if
      x = 0.5_dp * (x + r)
    end if

    ! 3. in place
    r = x
    call count_call('MPI_Sendrecv_replace')
    call MPI_Sendrecv_replace(r, n, MPI_DOUBLE_PRECISION, right, 3, left, 3, comm, &
                              MPI_STATUS_IGNORE, ierr)
    x = 0.5_dp * (x + r)

    ! 4. ready mode
    call count_call('MPI_Irecv')
    call MPI_Irecv(r, n, MPI_DOUBLE_PRECISION, left, 4, comm, req, ierr)
    call count_call('MPI_Barrier'); call MPI_Barrier(comm, ierr)
    call count_call('MPI_Rsend'); call MPI_Rsend(x, n, MPI_DOUBLE_PRECISION, right, 4, comm, ierr)
    call count_call('MPI_Wait'); call MPI_Wait(req, MPI_STATUS_IGNORE, ierr)
    x = 0.5_dp * (x + r)

    ! 5. buffered mode
    call count_call('MPI_Bsend'); call MPI_Bsend(x, n, MPI_DOUBLE_PRECISION, right, 5, comm, ierr)
    call count_call('MPI_Recv')
    call MPI_Recv(r, n, MPI_DOUBLE_PRECISION, left, 5, comm, MPI_STATUS_IGNORE, ierr)
    x = 0.5_dp * (x + r)

    x(0) = burn(o%work, x(0))
  end do

  call MPI_Buffer_detach(bbuf, bsize, ierr)

  ! Weighted sums, so that data in the wrong place changes the checksum.
  local = 0
  do k = 0, n - 1
    local = local + (1 + mod(k, 7)) * x(k)
  end do
  call count_call('MPI_Gather')
  call MPI_Gather(local, 1, MPI_DOUBLE_PRECISION, sums, 1, MPI_DOUBLE_PRECISION, 0, comm, ierr)
  checksum = 0
  if (rank == 0) then
    do p = 0, nranks - 1
      checksum = checksum + (p + 1) * sums(p)
    end do
  end if
  call report(o, rank, nranks, checksum)
  call finish(o, rank, 0)
end program ring
