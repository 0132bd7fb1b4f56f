! transpose: the all-to-all exchanges of a distributed FFT.
! The Fortran twin of c/transpose.c, which describes it; the same calls and the same checksum.
!
! -n SIZE  doubles each rank sends to each rank per MPI_Alltoall (default 64)
program transpose
  use mpi
  use counts
  use app_common
  implicit none
  integer, parameter :: comm = MPI_COMM_WORLD
  type(options) :: o
  integer :: ierr, rank, nranks, n, length, half, rtotal, total, it, p, s, k, first
  integer, allocatable :: scounts(:), sdispls(:), rcounts(:), rdispls(:), counts(:), displs(:)
  real(dp), allocatable :: a(:), b(:), c(:), gathered(:)
  real(dp) :: t, v, checksum

  o = options(name='transpose', size_help='doubles per rank pair in MPI_Alltoall', n=64)
  call app_begin(o, rank, nranks)

  n = o%n
  length = n * nranks
  half = n / 2
  allocate (scounts(0:nranks - 1), sdispls(0:nranks - 1), rcounts(0:nranks - 1), &
            rdispls(0:nranks - 1))
  rtotal = 0
  do p = 0, nranks - 1
    scounts(p) = f(rank, p)
    sdispls(p) = p * n  ! the start of block p
    rcounts(p) = f(p, rank)
    rdispls(p) = rtotal
    rtotal = rtotal + rcounts(p)
  end do

  allocate (a(0:length - 1), b(0:length - 1), c(0:rtotal - 1))
  c = 0
  do k = 0, length - 1
    a(k) = rank + 1e-3_dp * k
  end do

  do it = 0, o%iters - 1
    call count_call('MPI_Alltoall')
    call MPI_Alltoall(a, n, MPI_DOUBLE_PRECISION, b, n, MPI_DOUBLE_PRECISION, comm, ierr)
    do p = 0, nranks - 1
      first = p * n
      do k = 0, half - 1
        t = b(first + k + half) / (1 + k)
        v = b(first + k)
        b(first + k) = 0.5_dp * (v + t)
        b(first + k + half) = 0.5_dp * (v - t)
      end do
    end do
    if (mod(it, 2) == 1) then
      call count_call('MPI_Alltoallv')
      call MPI_Alltoallv(b, scounts, sdispls, MPI_DOUBLE_PRECISION, c, rcounts, rdispls, &
                         MPI_DOUBLE_PRECISION, comm, ierr)
      do p = 0, nranks - 1
        do k = 0, rcounts(p) - 1
          b(p * n + k) = 0.5_dp * (b(p * n + k) + c(rdispls(p) + k))
        end do
      end do
    end if
    a = b
    a(0) = burn(o%work, a(0))
  end do

  ! Everyone's last MPI_Alltoallv data, with each rank's weighted sum added to its first.
  allocate (counts(0:nranks - 1), displs(0:nranks - 1))
  total = 0
  do p = 0, nranks - 1
    counts(p) = 0
    do s = 0, nranks - 1
      counts(p) = counts(p) + f(s, p)
    end do
    displs(p) = total
    total = total + counts(p)
  end do
  do k = 0, length - 1
    c(0) = c(0) + (1 + mod(k, 7)) * a(k)
  end do
  allocate (gathered(0:total - 1))
  call count_call('MPI_Allgatherv')
  call MPI_Allgatherv(c, rtotal, MPI_DOUBLE_PRECISION, gathered, counts, displs, &
                      MPI_DOUBLE_PRECISION, comm, ierr)
  checksum = 0
  do k = 0, total - 1
    checksum = checksum + (1 + mod(k, 5)) * gathered(k)
  end do
  call report(o, rank, nranks, checksum)
  call finish(o, rank, 0)

contains

  ! Doubles rank s sends rank d in an MPI_Alltoallv.
  pure integer function f(s, d)
    integer, intent(in) :: s, d
    f = 1 + mod(s + 2 * d, n)
  end function f

end program transpose
