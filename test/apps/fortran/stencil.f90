! stencil: Jacobi iteration of a 2-D heat problem with halo exchange on a process grid.
! The Fortran twin of c/stencil.c, which describes it; the same calls and the same checksum.
!
! -n SIZE  side of each rank's square block (default 32)
program stencil
  use mpi
  use counts
  use app_common
  implicit none
  integer, parameter :: north = 1, south = 2, west = 3, east = 4
  integer, parameter :: comm = MPI_COMM_WORLD
  type(options) :: o
  integer :: ierr, rank, nranks, n, c, py, px, row, col, it, i, j, k, d, done
  integer :: dims(2), nbr(4), rreq(4), sreq(4)
  real(dp), allocatable :: u(:, :), v(:, :)
  real(dp), allocatable, asynchronous :: sendbuf(:, :), recvbuf(:, :)
  real(dp) :: residual, local, total, diff

  o = options(name='stencil', size_help="side of each rank's square block", n=32)
  call app_begin(o, rank, nranks)

  dims = 0
  call MPI_Dims_create(nranks, 2, dims, ierr)
  py = dims(1)
  px = dims(2)
  row = rank / px
  col = mod(rank, px)
  nbr = MPI_PROC_NULL
  if (row > 0) nbr(north) = rank - px
  if (row < py - 1) nbr(south) = rank + px
  if (col > 0) nbr(west) = rank - 1
  if (col < px - 1) nbr(east) = rank + 1

  ! u and v: (n+2) x (n+2) with a halo of one; u(i, j) is row i, column j.
  n = o%n
  c = (n + 1) / 2
  allocate (u(0:n + 1, 0:n + 1), v(0:n + 1, 0:n + 1), sendbuf(n, 4), recvbuf(n, 4))
  u = 0
  v = 0
  if (row == 0) u(0, 1:n) = 1

  residual = 0
  do it = 0, o%iters - 1
    do k = 1, n
      sendbuf(k, north) = u(1, k)
      sendbuf(k, south) = u(n, k)
      sendbuf(k, west) = u(k, 1)
      sendbuf(k, east) = u(k, n)
    end do
    do d = 1, 4
      call count_call('MPI_Irecv')
      call MPI_Irecv(recvbuf(1, d), n, MPI_DOUBLE_PRECISION, nbr(d), 0, comm, rreq(d), ierr)
    end do
    do d = north, south
      call count_call('MPI_Isend')
      call MPI_Isend(sendbuf(1, d), n, MPI_DOUBLE_PRECISION, nbr(d), 0, comm, sreq(d), ierr)
    end do
    do d = west, east
      call count_call('MPI_Issend')
      call MPI_Issend(sendbuf(1, d), n, MPI_DOUBLE_PRECISION, nbr(d), 0, comm, sreq(d), ierr)
    end do
    do done = 1, 4
      call count_call('MPI_Waitany'); call MPI_Waitany(4, rreq, d, MPI_STATUS_IGNORE, ierr)
      if (nbr(d) == MPI_PROC_NULL) cycle  ! keep the boundary value
      select case (d)
      case (north)
        u(0, 1:n) = recvbuf(:, d)
      case (south)
        u(n + 1, 1:n) = recvbuf(:, d)
      case (west)
        u(1:n, 0) = recvbuf(:, d)
      case (east)
        u(1:n, n + 1) = recvbuf(:, d)
      end select
    end do
    call count_call('MPI_Waitall'); call MPI_Waitall(4, sreq, MPI_STATUSES_IGNORE, ierr)

    local = 0
    do i = 1, n
      do j = 1, n
        v(i, j) = 0.25_dp * (u(i - 1, j) + u(i + 1, j) + u(i, j - 1) + u(i, j + 1))
        diff = v(i, j) - u(i, j)
        local = local + diff * diff
      end do
    end do
    u(1:n, 1:n) = v(1:n, 1:n)
    u(c, c) = burn(o%work, u(c, c))
    call count_call('MPI_Allreduce')
    call MPI_Allreduce(local, residual, 1, MPI_DOUBLE_PRECISION, MPI_SUM, comm, ierr)
  end do

  local = 0
  do i = 1, n
    do j = 1, n
      local = local + u(i, j)
    end do
  end do
  total = 0
  call count_call('MPI_Reduce')
  call MPI_Reduce(local, total, 1, MPI_DOUBLE_PRECISION, MPI_SUM, 0, comm, ierr)
  call report(o, rank, nranks, total + residual)
  call finish(o, rank, 0)
end program stencil
