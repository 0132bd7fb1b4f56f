! wavefront: pipelined forward and backward sweeps, like the SSOR solver of NPB LU.
! The Fortran twin of c/wavefront.c, which describes it; the same calls and the same checksum.
!
! -n SIZE  rows and columns of each rank's strip (default 32)
program wavefront
  use mpi
  use counts
  use app_common
  implicit none
  integer, parameter :: comm = MPI_COMM_WORLD
  type(options) :: o
  integer :: ierr, rank, nranks, n, c, blocks, up, down, it, b, lo, hi, i, j
  real(dp), allocatable :: u(:, :)
  real(dp) :: local, total

  o = options(name='wavefront', size_help="rows and columns of each rank's strip", n=32)
  call app_begin(o, rank, nranks)

  up = MPI_PROC_NULL
  if (rank > 0) up = rank - 1
  down = MPI_PROC_NULL
  if (rank < nranks - 1) down = rank + 1

  ! u: (n+2) x (n+2) with a halo of one; u(j, i) is row i, column j, so that the row segments
  ! sent are contiguous. Block b is the columns lo(b) <= j < lo(b+1).
  n = o%n
  c = (n + 1) / 2
  blocks = min(n, 4)
  allocate (u(0:n + 1, 0:n + 1))
  u = 0
  u(0, :) = 1
  if (rank == 0) u(:, 0) = 1

  do it = 0, o%iters - 1
    do b = 0, blocks - 1
      lo = first_column(b)
      hi = first_column(b + 1)
      if (up /= MPI_PROC_NULL) then
        call count_call('MPI_Recv')
        call MPI_Recv(u(lo, 0), hi - lo, MPI_DOUBLE_PRECISION, up, 1, comm, MPI_STATUS_IGNORE, ierr)
      end if
      do i = 1, n
        do j = lo, hi - 1
          u(j, i) = 0.5_dp * u(j, i) + 0.25_dp * (u(j, i - 1) + u(j - 1, i))
        end do
      end do
      if (down /= MPI_PROC_NULL) then
        call count_call('MPI_Send')
        call MPI_Send(u(lo, n), hi - lo, MPI_DOUBLE_PRECISION, down, 1, comm, ierr)
      end if
    end do
    do b = blocks - 1, 0, -1
      lo = first_column(b)
      hi = first_column(b + 1)
      if (down /= MPI_PROC_NULL) then
        call count_call('MPI_Recv')
        call MPI_Recv(u(lo, n + 1), hi - lo, MPI_DOUBLE_PRECISION, down, 2, comm, &
                      MPI_STATUS_IGNORE, ierr)
      end if
      do i = n, 1, -1
        do j = hi - 1, lo, -1
          u(j, i) = 0.5_dp * u(j, i) + 0.25_dp * (u(j, i + 1) + u(j + 1, i))
        end do
      end do
      if (up /= MPI_PROC_NULL) then
        call count_call('MPI_Send')
        call MPI_Send(u(lo, 1), hi - lo, MPI_DOUBLE_PRECISION, up, 2, comm, ierr)
      end if
    end do
    u(c, c) = burn(o%work, u(c, c))
  end do

  local = 0
  do i = 1, n
    do j = 1, n
      local = local + u(j, i)
    end do
  end do
  total = 0
  call count_call('MPI_Reduce')
  call MPI_Reduce(local, total, 1, MPI_DOUBLE_PRECISION, MPI_SUM, 0, comm, ierr)
  call report(o, rank, nranks, total)
  call finish(o, rank, 0)

contains

  pure integer function first_column(block)
    integer, intent(in) :: block
    first_column = 1 + block * n / blocks
  end function first_column

end program wavefront
