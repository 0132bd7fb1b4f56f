! persistent: persistent point-to-point requests, non-blocking collectives and the scans.
! The Fortran twin of c/persistent.c, which describes it; the same calls and the same checksum.
!
! -n SIZE  doubles per message (default 100)
program persistent
  use mpi
  use counts
  use app_common
  implicit none
  integer, parameter :: comm = MPI_COMM_WORLD
  type(options) :: o
  integer :: ierr, rank, nranks, n, right, left, it, k, p, r
  integer :: bcast_root, reduce_root, req, index, outcount
  integer :: p2p(4), coll(4), done(4)
  integer, allocatable :: rs_counts(:)
  logical :: flag
  real(dp), allocatable :: x(:)
  real(dp), allocatable, asynchronous :: out(:), from_left(:), from_right(:), bc(:), red(:), &
    a2a_out(:), a2a_in(:), sums(:), rs_in(:)
  real(dp), asynchronous :: local, global
  real(dp) :: prefix, exprefix, block, pair(2), mixed, weighted, checksum

  o = options(name='persistent', size_help='doubles per message', n=100, funneled=.true.)
  call app_begin(o, rank, nranks)

  n = o%n
  right = mod(rank + 1, nranks)
  left = mod(rank - 1 + nranks, nranks)
  allocate (x(0:n - 1), out(0:n - 1), from_left(0:n - 1), from_right(0:n - 1), bc(0:n - 1), &
            red(0:n - 1), a2a_out(0:nranks - 1), a2a_in(0:nranks - 1), sums(0:nranks - 1), &
            rs_in(0:2 * nranks - 1), rs_counts(0:nranks - 1))
  do p = 0, nranks - 1
    rs_counts(p) = 1 + mod(p, 2)
  end do
  do k = 0, n - 1
    x(k) = rank + 1e-3_dp * k
  end do

  ! p2p(1:2): the rightward pair, p2p(3:4): the leftward pair
  call count_call('MPI_Recv_init')
  call MPI_Recv_init(from_left, n, MPI_DOUBLE_PRECISION, left, 1, comm, p2p(1), ierr)
  call count_call('MPI_Send_init')
  call MPI_Send_init(out, n, MPI_DOUBLE_PRECISION, right, 1, comm, p2p(2), ierr)
  call count_call('MPI_Recv_init')
  call MPI_Recv_init(from_right, n, MPI_DOUBLE_PRECISION, right, 2, comm, p2p(3), ierr)
  call count_call('MPI_Send_init')
  call MPI_Send_init(out, n, MPI_DOUBLE_PRECISION, left, 2, comm, p2p(4), ierr)

  do it = 0, o%iters - 1
    out = x
    call count_call('MPI_Startall'); call MPI_Startall(2, p2p, ierr)
    call count_call('MPI_Start'); call MPI_Start(p2p(3), ierr)
    call count_call('MPI_Start'); call MPI_Start(p2p(4), ierr)
    call count_call('MPI_Waitall'); call MPI_Waitall(4, p2p, MPI_STATUSES_IGNORE, ierr)
    do k = 0, n - 1
      x(k) = 0.5_dp * x(k) + 0.25_dp * (from_left(k) + from_right(k))
    end do

    local = add_up(x)
    call count_call('MPI_Iallreduce')
    call MPI_Iallreduce(local, global, 1, MPI_DOUBLE_PRECISION, MPI_SUM, comm, req, ierr)
    call count_call('MPI_Wait'); call MPI_Wait(req, MPI_STATUS_IGNORE, ierr)

    bcast_root = mod(it, nranks)
    reduce_root = mod(it + 1, nranks)
    bc = x
    call count_call('MPI_Ibcast')
    call MPI_Ibcast(bc, n, MPI_DOUBLE_PRECISION, bcast_root, comm, req, ierr)
    call count_call('MPI_Test'); call MPI_Test(req, flag, MPI_STATUS_IGNORE, ierr)
    call count_call('MPI_Wait'); call MPI_Wait(req, MPI_STATUS_IGNORE, ierr)

    do p = 0, nranks - 1
      a2a_out(p) = x(mod(p, n)) + p
    end do
    call count_call('MPI_Ireduce')
    call MPI_Ireduce(x, red, n, MPI_DOUBLE_PRECISION, MPI_SUM, reduce_root, comm, coll(1), ierr)
    call count_call('MPI_Ibarrier'); call MPI_Ibarrier(comm, coll(2), ierr)
    call count_call('MPI_Ialltoall')
    call MPI_Ialltoall(a2a_out, 1, MPI_DOUBLE_PRECISION, a2a_in, 1, MPI_DOUBLE_PRECISION, comm, &
                       coll(3), ierr)
    call count_call('MPI_Iallgather')
    call MPI_Iallgather(local, 1, MPI_DOUBLE_PRECISION, sums, 1, MPI_DOUBLE_PRECISION, comm, &
                        coll(4), ierr)
    call count_call('MPI_Testany'); call MPI_Testany(4, coll, index, flag, MPI_STATUS_IGNORE, ierr)
    call count_call('MPI_Testsome')
    call MPI_Testsome(4, coll, outcount, done, MPI_STATUSES_IGNORE, ierr)
    call count_call('MPI_Testall'); call MPI_Testall(4, coll, flag, MPI_STATUSES_IGNORE, ierr)
    call count_call('MPI_Waitsome')
    call MPI_Waitsome(4, coll, outcount, done, MPI_STATUSES_IGNORE, ierr)
    call count_call('MPI_Waitall'); call MPI_Waitall(4, coll, MPI_STATUSES_IGNORE, ierr)

    ! Mix everything in, scaled to stay near the values of x.
    mixed = global + add_up(sums)
    do p = 0, nranks - 1
      mixed = mixed + a2a_in(p)
    end do
    if (rank == reduce_root) mixed = mixed + red(n - 1)
    do k = 0, n - 1
      x(k) = 0.5_dp * x(k) + 0.5_dp * bc(k)
    end do
    x(n - 1) = 0.5_dp * x(n - 1) + 0.5_dp * mixed / (2 * nranks * n + 2 * nranks)
    x(0) = burn(o%work, x(0))
  end do

  do r = 1, 4
    call count_call('MPI_Request_free'); call MPI_Request_free(p2p(r), ierr)
  end do

  local = add_up(x)
  exprefix = 0
  pair = 0
  do p = 0, 2 * nranks - 1
    rs_in(p) = x(mod(p, n))
  end do
  call count_call('MPI_Scan')
  call MPI_Scan(local, prefix, 1, MPI_DOUBLE_PRECISION, MPI_SUM, comm, ierr)
  call count_call('MPI_Exscan')
  call MPI_Exscan(local, exprefix, 1, MPI_DOUBLE_PRECISION, MPI_SUM, comm, ierr)
  if (rank == 0) exprefix = 0  ! MPI_Exscan leaves rank 0's result undefined
  call count_call('MPI_Reduce_scatter_block')
  call MPI_Reduce_scatter_block(rs_in, block, 1, MPI_DOUBLE_PRECISION, MPI_SUM, comm, ierr)
  call count_call('MPI_Reduce_scatter')
  call MPI_Reduce_scatter(rs_in, pair, rs_counts, MPI_DOUBLE_PRECISION, MPI_SUM, comm, ierr)

  weighted = 1e-3_dp * ((prefix - exprefix) + block + pair(1) + pair(2))
  do k = 0, n - 1
    weighted = weighted + (1 + mod(k, 7)) * x(k)
  end do
  checksum = 0
  call count_call('MPI_Reduce')
  call MPI_Reduce(weighted, checksum, 1, MPI_DOUBLE_PRECISION, MPI_SUM, 0, comm, ierr)
  call report(o, rank, nranks, checksum)
  call finish(o, rank, 0)
end program persistent
