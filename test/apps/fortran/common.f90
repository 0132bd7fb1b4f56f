! What every pskel test application shares: the Fortran twin of c/common.h.
!
! Options: -n SIZE  problem size (its meaning is each program's own)
!          -i ITERS iterations
!          -w WORK  about WORK*1000 flops of compute per iteration and rank (0: none)
!          -c DIR   write DIR/counts.RANK, the calls of each traced MPI function
!          -t       rank 0 prints elapsed_seconds=SECONDS to stderr
!          -h       help
! The report line is byte for byte the C one, so a twin's output can be compared with diff.
! A program begins
!   o = options(name='ring', size_help='doubles per message', n=1000)
!   call app_begin(o, rank, nranks)
! and ends with call report(...) and call finish(o, rank, 0).
module app_common
  use mpi
  use counts
  use, intrinsic :: iso_fortran_env, only: int64, output_unit, error_unit
  implicit none
  private
  public :: dp, options, app_begin, parse_options, burn, add_up, report, finish

  integer, parameter :: dp = kind(1.0d0)

  type :: options
    character(len=32) :: name = ''       ! program name, first word of the report line
    character(len=64) :: size_help = ''  ! what -n means
    integer :: n = 1, iters = 10, work = 10
    logical :: funneled = .false.        ! start with MPI_Init_thread(MPI_THREAD_FUNNELED)
    character(len=:), allocatable :: count_dir  ! -c, unallocated if not given
    logical :: timing = .false.          ! -t
    real(dp) :: start = 0                ! MPI_Wtime() right after init
  end type options

contains

  subroutine usage(unit, o)
    integer, intent(in) :: unit
    type(options), intent(in) :: o
    write (unit, '(3a)') 'usage: ', trim(o%name), ' [-n SIZE] [-i ITERS] [-w WORK] [-c DIR] [-t]'
    write (unit, '(3a,i0,a)') '  -n SIZE   ', trim(o%size_help), ' (default ', o%n, ')'
    write (unit, '(a,i0,a)') '  -i ITERS  iterations (default ', o%iters, ')'
    write (unit, '(a,i0,a)') '  -w WORK   about WORK*1000 flops per iteration and rank (default ', &
      o%work, ')'
    write (unit, '(a)') '  -c DIR    write DIR/counts.RANK: calls per traced MPI function'
    write (unit, '(a)') '  -t        print elapsed_seconds=... to stderr (rank 0)'
  end subroutine usage

  ! The value of argument i as an integer >= min; ok is false if it is missing or not one.
  subroutine int_argument(i, min, value, ok)
    integer, intent(in) :: i, min
    integer, intent(inout) :: value
    logical, intent(out) :: ok
    character(len=32) :: arg
    integer :: length, ios, v
    call get_command_argument(i, arg, length)
    ok = .false.
    if (length < 1 .or. length > len(arg)) return
    if (verify(trim(arg), '0123456789') /= 0) return
    read (arg, *, iostat=ios) v
    if (ios /= 0 .or. v < min) return
    value = v
    ok = .true.
  end subroutine int_argument

  ! Parses the command line into o (which holds the defaults). status is -1 to go on, else the
  ! exit status (0 after -h, 2 after a bad option); only rank 0 prints.
  subroutine parse_options(o, rank, status)
    type(options), intent(inout) :: o
    integer, intent(in) :: rank
    integer, intent(out) :: status
    character(len=:), allocatable :: arg
    integer :: i, length
    logical :: ok

    status = -1
    i = 1
    do while (i <= command_argument_count())
      call get_command_argument(i, length=length)
      allocate (character(len=length) :: arg)
      call get_command_argument(i, arg)
      ok = .true.
      select case (arg)
      case ('-n')
        i = i + 1
        call int_argument(i, 1, o%n, ok)
      case ('-i')
        i = i + 1
        call int_argument(i, 0, o%iters, ok)
      case ('-w')
        i = i + 1
        call int_argument(i, 0, o%work, ok)
      case ('-c')
        i = i + 1
        call get_command_argument(i, length=length)
        ok = i <= command_argument_count() .and. length > 0
        if (ok) then
          allocate (character(len=length) :: o%count_dir)
          call get_command_argument(i, o%count_dir)
        end if
      case ('-t')
        o%timing = .true.
      case ('-h')
        if (rank == 0) call usage(output_unit, o)
        status = 0
        return
      case default
        ok = .false.
      end select
      if (.not. ok) then
        if (rank == 0) then
          write (error_unit, '(4a)') trim(o%name), ': bad option or value: ', arg
          call usage(error_unit, o)
        end if
        status = 2
        return
      end if
      deallocate (arg)
      i = i + 1
    end do
  end subroutine parse_options

  ! The start of every program: MPI_Init (or MPI_Init_thread if o%funneled), the start time,
  ! this rank and the number of ranks in MPI_COMM_WORLD, then the options parsed into o, which
  ! holds the program's name, size_help, n and funneled. After -h or a bad option it ends the
  ! program through finish.
  subroutine app_begin(o, rank, nranks)
    type(options), intent(inout) :: o
    integer, intent(out) :: rank, nranks
    integer :: ierr, provided, status
    if (o%funneled) then
      call count_call('MPI_Init_thread')
      call MPI_Init_thread(MPI_THREAD_FUNNELED, provided, ierr)
    else
      call count_call('MPI_Init'); call MPI_Init(ierr)
    end if
    o%start = MPI_Wtime()
    call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
    call MPI_Comm_size(MPI_COMM_WORLD, nranks, ierr)
    call parse_options(o, rank, status)
    if (status >= 0) call finish(o, rank, status)
  end subroutine app_begin

  ! The compute of one iteration: 500*work steps of 2 dependent flops, seeded by x0. The result
  ! depends on x0 and work, so callers feed it into their data and it cannot be optimised away.
  pure function burn(work, x0) result(x)
    integer, intent(in) :: work
    real(dp), intent(in) :: x0
    real(dp) :: x
    integer(int64) :: k
    x = x0
    do k = 1, 500_int64 * work
      x = x * 0.999_dp + 0.001_dp
    end do
  end function burn

  ! The sum of a, added up in order as the C twins do (sum() may add in another order).
  pure function add_up(a) result(total_of_a)
    real(dp), intent(in) :: a(:)
    real(dp) :: total_of_a
    integer :: i
    total_of_a = 0
    do i = 1, size(a)
      total_of_a = total_of_a + a(i)
    end do
  end function add_up

  ! x as C's printf("%.12e") writes it.
  function c_format(x) result(s)
    real(dp), intent(in) :: x
    character(len=:), allocatable :: s
    character(len=32) :: buf
    character(len=8) :: digits
    integer :: e, exponent
    write (buf, '(es32.12e4)') x
    buf = adjustl(buf)
    e = index(buf, 'E')
    read (buf(e + 1:), *) exponent
    write (digits, '(i0.2)') abs(exponent)
    s = buf(:e - 1) // 'e' // merge('-', '+', exponent < 0) // trim(digits)
  end function c_format

  ! Rank 0 prints the one line of standard output.
  subroutine report(o, rank, nranks, checksum)
    type(options), intent(in) :: o
    integer, intent(in) :: rank, nranks
    real(dp), intent(in) :: checksum
    if (rank == 0) write (output_unit, '(2a,i0,a,i0,a,i0,a,i0,2a)') trim(o%name), ': ranks=', &
      nranks, ' n=', o%n, ' iters=', o%iters, ' work=', o%work, ' checksum=', c_format(checksum)
  end subroutine report

  ! Ends the run: timing, MPI_Finalize, the counts file, and stop with the exit status.
  subroutine finish(o, rank, status)
    type(options), intent(in) :: o
    integer, intent(in) :: rank, status
    integer :: ierr, code
    logical :: ok
    character(len=32) :: seconds
    if (o%timing .and. rank == 0) then
      write (seconds, '(f32.6)') MPI_Wtime() - o%start  ! f0.6 would drop the leading 0
      write (error_unit, '(2a)') 'elapsed_seconds=', trim(adjustl(seconds))
    end if
    flush (output_unit)
    call count_call('MPI_Finalize'); call MPI_Finalize(ierr)
    code = status
    if (allocated(o%count_dir)) then
      call write_counts(o%count_dir, rank, ok)
      if (.not. ok .and. code == 0) code = 1
    end if
    if (code /= 0) stop code, quiet=.true.
    stop
  end subroutine finish

end module app_common
