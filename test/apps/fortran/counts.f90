! Call counting for the pskel test applications: the Fortran twin of c/counts.h.
!
! Every call to a function pskel traces is preceded by count_call with its name:
!     call count_call('MPI_Send'); call MPI_Send(x, n, MPI_DOUBLE_PRECISION, dest, tag, comm, ierr)
! Nothing here calls MPI: write_counts runs after MPI_Finalize, so the finalize itself is counted.
!
! write_counts(dir, rank) writes DIR/counts.RANK with one "MPI_Name count" line per function
! called at least once, sorted by name (byte order, as `LC_ALL=C sort`).
module counts
  use, intrinsic :: iso_c_binding, only: c_char, c_int, c_null_char
  use, intrinsic :: iso_fortran_env, only: int64, error_unit
  implicit none
  private
  public :: count_call, write_counts

  integer, parameter :: nfunctions = 56
  ! The functions pskel traces, in byte order of their names: the one table of names.
  character(len=24), parameter :: names(nfunctions) = [character(len=24) :: &
    'MPI_Allgather', 'MPI_Allgatherv', 'MPI_Allreduce', 'MPI_Alltoall', 'MPI_Alltoallv', &
    'MPI_Barrier', 'MPI_Bcast', 'MPI_Bsend', 'MPI_Cart_create', 'MPI_Cart_sub', &
    'MPI_Comm_create', 'MPI_Comm_dup', 'MPI_Comm_free', 'MPI_Comm_split', 'MPI_Exscan', &
    'MPI_Finalize', 'MPI_Gather', 'MPI_Gatherv', 'MPI_Iallgather', 'MPI_Iallreduce', &
    'MPI_Ialltoall', 'MPI_Ibarrier', 'MPI_Ibcast', 'MPI_Init', 'MPI_Init_thread', 'MPI_Iprobe', &
    'MPI_Irecv', 'MPI_Ireduce', 'MPI_Isend', 'MPI_Issend', 'MPI_Probe', 'MPI_Recv', &
    'MPI_Recv_init', 'MPI_Reduce', 'MPI_Reduce_scatter', 'MPI_Reduce_scatter_block', &
    'MPI_Request_free', 'MPI_Rsend', 'MPI_Scan', 'MPI_Scatter', 'MPI_Scatterv', 'MPI_Send', &
    'MPI_Send_init', 'MPI_Sendrecv', 'MPI_Sendrecv_replace', 'MPI_Ssend', 'MPI_Start', &
    'MPI_Startall', 'MPI_Test', 'MPI_Testall', 'MPI_Testany', 'MPI_Testsome', 'MPI_Wait', &
    'MPI_Waitall', 'MPI_Waitany', 'MPI_Waitsome']
  integer(int64) :: calls(nfunctions) = 0

  interface
    ! int mkdir(const char *path, mode_t mode), to create the counts directory
    integer(c_int) function c_mkdir(path, mode) bind(c, name='mkdir')
      import :: c_char, c_int
      character(kind=c_char), intent(in) :: path(*)
      integer(c_int), value :: mode
    end function c_mkdir
  end interface

contains

  ! Counts one call of the MPI function called name; stops on a name not in the table.
  subroutine count_call(name)
    character(len=*), intent(in) :: name
    integer :: i
    do i = 1, nfunctions
      if (names(i) == name) then
        calls(i) = calls(i) + 1
        return
      end if
    end do
    write (error_unit, '(2a)') 'count_call: not a traced MPI function: ', name
    error stop 1
  end subroutine count_call

  ! Writes DIR/counts.RANK (creating DIR if needed); ok is false after an I/O error.
  subroutine write_counts(dir, rank, ok)
    character(len=*), intent(in) :: dir
    integer, intent(in) :: rank
    logical, intent(out) :: ok
    character(len=16) :: r
    integer :: i, unit, ios
    integer(c_int) :: ignored

    ! The directory may exist already, or be made by another rank at the same time.
    ignored = c_mkdir(dir // c_null_char, int(o'777', c_int))
    write (r, '(i0)') rank
    open (newunit=unit, file=dir // '/counts.' // trim(r), status='replace', action='write', &
          iostat=ios)
    ok = ios == 0
    if (.not. ok) then
      write (error_unit, '(3a)') 'cannot write ', dir // '/counts.', trim(r)
      return
    end if
    do i = 1, nfunctions
      if (calls(i) > 0) write (unit, '(a,1x,i0)') trim(names(i)), calls(i)
    end do
    close (unit, iostat=ios)
    ok = ios == 0
  end subroutine write_counts

end module counts
