! cg: conjugate gradients on a 1-D Laplacian distributed in blocks over the ranks.
! The Fortran twin of c/cg.c, which describes it; the same calls and the same checksum.
!
! -n SIZE  vector elements per rank (default 1000)
program cg
  use mpi
  use counts
  use app_common
  implicit none
  integer, parameter :: comm = MPI_COMM_WORLD
  type(options) :: o
  integer :: ierr, rank, nranks, n, left, right, it, k
  real(dp), allocatable :: b(:), x(:), r(:), p(:), q(:)
  real(dp) :: rr, rr_new, pq, alpha, beta, local, total, checksum

  o = options(name='cg', size_help='vector elements per rank', n=1000)
  call app_begin(o, rank, nranks)

  n = o%n
  left = MPI_PROC_NULL
  if (rank > 0) left = rank - 1
  right = MPI_PROC_NULL
  if (rank < nranks - 1) right = rank + 1

  if (rank == 0) then
    allocate (b(0:n * nranks - 1))
    do k = 0, n * nranks - 1
      b(k) = 1.0_dp + 0.1_dp * mod(k, 10)
    end do
  else
    allocate (b(0:0))  ! not used off the root
  end if
  ! p has a halo of one: p(-1) and p(n) are the neighbours' edge values.
  allocate (x(0:n - 1), r(0:n - 1), p(-1:n), q(0:n - 1))
  x = 0
  call count_call('MPI_Scatter')
  call MPI_Scatter(b, n, MPI_DOUBLE_PRECISION, r, n, MPI_DOUBLE_PRECISION, 0, comm, ierr)
  p(0:n - 1) = r

  local = dot(r, r)
  call count_call('MPI_Allreduce')
  call MPI_Allreduce(local, rr, 1, MPI_DOUBLE_PRECISION, MPI_SUM, comm, ierr)
  do it = 0, o%iters - 1
    ! p's neighbours beyond the block: 0 at the ends of the domain
    p(-1) = 0
    p(n) = 0
    call count_call('MPI_Sendrecv')
    call MPI_Sendrecv(p(n - 1), 1, MPI_DOUBLE_PRECISION, right, 1, p(-1), 1, &
                      MPI_DOUBLE_PRECISION, left, 1, comm, MPI_STATUS_IGNORE, ierr)
    call count_call('MPI_Sendrecv')
    call MPI_Sendrecv(p(0), 1, MPI_DOUBLE_PRECISION, left, 2, p(n), 1, &
                      MPI_DOUBLE_PRECISION, right, 2, comm, MPI_STATUS_IGNORE, ierr)
    do k = 0, n - 1
      q(k) = 2.1_dp * p(k) - p(k - 1) - p(k + 1)
    end do

    local = dot(p(0:n - 1), q)
    call count_call('MPI_Allreduce')
    call MPI_Allreduce(local, pq, 1, MPI_DOUBLE_PRECISION, MPI_SUM, comm, ierr)
    alpha = 0
    if (pq > 0) alpha = rr / pq
    do k = 0, n - 1
      x(k) = x(k) + alpha * p(k)
      r(k) = r(k) - alpha * q(k)
    end do
    x(0) = burn(o%work, x(0))

    local = dot(r, r)
    call count_call('MPI_Allreduce')
    call MPI_Allreduce(local, rr_new, 1, MPI_DOUBLE_PRECISION, MPI_SUM, comm, ierr)
    beta = 0
    if (rr > 0) beta = rr_new / rr
    rr = rr_new
    do k = 0, n - 1
      p(k) = r(k) + beta * p(k)
    end do
  end do

  total = 0
  do k = 0, n - 1
    total = total + x(k)
  end do
  checksum = 0
  call count_call('MPI_Reduce')
  call MPI_Reduce(total, checksum, 1, MPI_DOUBLE_PRECISION, MPI_SUM, 0, comm, ierr)
  call report(o, rank, nranks, checksum)
  call finish(o, rank, 0)

contains

  pure function dot(a, c) result(s)
    real(dp), intent(in) :: a(:), c(:)
    real(dp) :: s
    integer :: i
    s = 0
    do i = 1, size(a)
      s = s + a(i) * c(i)
    end do
  end function dot

end program cg
