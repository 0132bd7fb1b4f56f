! masterworker: rank 0 farms out tasks to the other ranks, first come first served.
! The Fortran twin of c/masterworker.c, which describes it; the same calls and the same checksum.
!
! -n SIZE   number of tasks (default 40)
! -i ITERS  compute steps per task, each of about WORK*1000 flops (default 10)
program masterworker
  use mpi
  use counts
  use app_common
  use, intrinsic :: iso_fortran_env, only: error_unit
  implicit none
  integer, parameter :: comm = MPI_COMM_WORLD
  integer, parameter :: tag_task = 1, tag_stop = 2, tag_result = 3
  type(options) :: o
  integer :: ierr, rank, nranks, next, busy, w, t
  integer :: st(MPI_STATUS_SIZE)
  real(dp), allocatable :: results(:)
  ! Every message is doubles: a task is (task id), a result (task id, value), a stop empty.
  ! Arrays all: MPICH's mpi module declares no interface for MPI_Send and MPI_Recv, so gfortran
  ! wants every call of one in a file to pass a buffer of the same type and rank.
  real(dp) :: task_id(1), result(2), checksum
  logical :: leftover

  o = options(name='masterworker', size_help='number of tasks', n=40)
  call app_begin(o, rank, nranks)

  if (rank == 0) then
    allocate (results(0:o%n - 1))
    next = 0
    busy = 0
    do w = 1, nranks - 1
      task_id(1) = next
      if (next < o%n) then
        call count_call('MPI_Send')
        call MPI_Send(task_id, 1, MPI_DOUBLE_PRECISION, w, tag_task, comm, ierr)
        next = next + 1
        busy = busy + 1
      else
        call count_call('MPI_Send')
        call MPI_Send(task_id, 0, MPI_DOUBLE_PRECISION, w, tag_stop, comm, ierr)
      end if
    end do
    do while (busy > 0)
      call count_call('MPI_Probe'); call MPI_Probe(MPI_ANY_SOURCE, MPI_ANY_TAG, comm, st, ierr)
      call count_call('MPI_Recv')
      call MPI_Recv(result, 2, MPI_DOUBLE_PRECISION, MPI_ANY_SOURCE, MPI_ANY_TAG, comm, st, ierr)
      results(nint(result(1))) = result(2)
      task_id(1) = next
      if (next < o%n) then
        call count_call('MPI_Send')
        call MPI_Send(task_id, 1, MPI_DOUBLE_PRECISION, st(MPI_SOURCE), tag_task, comm, ierr)
        next = next + 1
      else
        call count_call('MPI_Send')
        call MPI_Send(task_id, 0, MPI_DOUBLE_PRECISION, st(MPI_SOURCE), tag_stop, comm, ierr)
        busy = busy - 1
      end if
    end do
    do while (next < o%n)  ! one rank: no workers
      results(next) = task(next)
      next = next + 1
    end do

    call count_call('MPI_Iprobe')
    call MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, comm, leftover, MPI_STATUS_IGNORE, ierr)
    checksum = 0
    do t = 0, o%n - 1
      checksum = checksum + results(t)
    end do
    call report(o, rank, nranks, checksum)
  else
    do
      call count_call('MPI_Probe'); call MPI_Probe(0, MPI_ANY_TAG, comm, st, ierr)
      call count_call('MPI_Recv')
      call MPI_Recv(task_id, 1, MPI_DOUBLE_PRECISION, 0, st(MPI_TAG), comm, MPI_STATUS_IGNORE, ierr)
      if (st(MPI_TAG) == tag_stop) exit
      result(1) = task_id(1)
      result(2) = task(nint(task_id(1)))
      call count_call('MPI_Send')
      call MPI_Send(result, 2, MPI_DOUBLE_PRECISION, 0, tag_result, comm, ierr)
    end do
    call count_call('MPI_Iprobe')
    call MPI_Iprobe(0, MPI_ANY_TAG, comm, leftover, MPI_STATUS_IGNORE, ierr)
  end if
  if (leftover) write (error_unit, '(a,i0,a)') 'masterworker: rank ', rank, &
    ': a message was left over'
  call finish(o, rank, merge(1, 0, leftover))

contains

  function task(tid) result(v)
    integer, intent(in) :: tid
    real(dp) :: v
    integer :: step
    v = 1e-3_dp * tid
    do step = 0, o%iters - 1
      v = burn(o%work, v + 1e-2_dp * mod(tid, 7))
    end do
    v = v + tid
  end function task

end program masterworker
