#!/usr/bin/env python3
"""Generates pskel's PMPI wrappers and function table from mpi_functions.tbl.

Usage: gen_wrappers.py TABLE functions|c|fortran|sites OUTPUT

  functions  the FunctionId enum and name/kind table (C++ header; tracer and reader share it)
  c          the C wrappers: MPI_X(...) records the call and forwards to PMPI_X
  fortran    the Fortran wrappers (gfortran manglings) forwarding to pmpi_x_; needed where the
             MPI's Fortran bindings call PMPI_* directly (Open MPI) and so bypass the C wrappers
  sites      the MPI calls `pskel instrument` counts (sends, receives, collectives), with the
             argument positions of their count and datatype (core/instrument)

Everything a wrapper records comes from the argument roles in the table; this script only
knows, per role, which recorder call takes the value (core/tracer/call.h). Roles are applied in
ROLE_ORDER, not argument order, because e.g. a peer can be translated to a world rank only once
the communicator is known.
"""
import re
import sys

KINDS = ["env", "p2p", "p2p_init", "start", "completion", "probe", "request", "collective",
         "icollective", "comm", "meta"]

# Role -> (phase, C++ statement). {v} is the argument's value as a C value, {p} the raw parameter.
ROLE_CALLS = {
    "comm": ("post", "call.comm({v});"),
    "sbuf": ("post", "call.send_buffer({v});"),
    "count": ("post", "call.count({v});"),
    "type": ("post", "call.type({v});"),
    "rcount": ("post", "call.recv_count({v});"),
    "rtype": ("post", "call.recv_type({v});"),
    "scounts": ("post", "call.send_counts({v});"),
    "rcounts": ("post", "call.recv_counts({v});"),
    "dest": ("post", "call.dest({v});"),
    "source": ("post", "call.source({v});"),
    "tag": ("post", "call.tag({v});"),
    "rtag": ("post", "call.recv_tag({v});"),
    "root": ("post", "call.root({v});"),
    "op": ("post", "call.op({v});"),
    "newcomm": ("post", "call.new_comm({v});"),
    "freecomm": ("pre", "call.free_comm({v});"),
    "newreq": ("post", "call.new_request({v}, false);"),
    "newpreq": ("post", "call.new_request({v}, true);"),
    "startreq": ("post", "call.start_requests(1, {p});"),
    "startreqs": ("post", "call.start_requests({n}, {p});"),
    "waitreq": ("pre", "call.capture_requests(1, {p});"),
    "waitreqs": ("pre", "call.capture_requests({n}, {p});"),
    "freereq": ("pre", "call.free_request({p});"),
}
# Roles read by the completion / receive statement rather than one call each.
COMPLETION_ROLES = {"nreq", "flag", "index", "outcount", "indices", "status", "statuses"}
ROLE_ORDER = ["comm", "root", "sbuf", "count", "type", "rcount", "rtype", "scounts", "rcounts", "dest",
              "source", "tag", "rtag", "op", "freecomm", "waitreq", "waitreqs",
              "freereq", "newcomm", "newreq", "newpreq", "startreq", "startreqs"]
assert set(ROLE_ORDER) == set(ROLE_CALLS)


class Arg:
    def __init__(self, text, where):
        decl, _, role = text.partition(":")
        role = role.strip()
        self.at_root = role.endswith("@root")
        self.role = role.removesuffix("@root") or None
        if self.role and self.role not in ROLE_CALLS and self.role not in COMPLETION_ROLES:
            sys.exit(f"{where}: unknown role '{self.role}'")
        m = re.fullmatch(r"(.*?)\s*\b(\w+)\s*(\[\])?", decl.strip())
        if not m:
            sys.exit(f"{where}: cannot parse argument '{decl.strip()}'")
        base, self.name, array = m.group(1).strip(), m.group(2), bool(m.group(3))
        self.c_type = base + ("*" if array else "")   # as a parameter type
        self.c_decl = f"{base} {self.name}{'[]' if array else ''}"
        self.pointer = array or base.endswith("*")
        self.handle = re.sub(r"\bconst\b|\*", "", base).strip()  # MPI_Comm, int, void, ...


class Function:
    def __init__(self, line, where):
        head, _, args = line.partition("|")
        fields = head.split()
        if len(fields) not in (3, 4) or (len(fields) == 4 and fields[3] != "manual"):
            sys.exit(f"{where}: expected 'ID NAME KIND [manual] | args'")
        self.id, self.name, self.kind = int(fields[0]), fields[1], fields[2]
        self.manual = len(fields) == 4
        if self.kind not in KINDS:
            sys.exit(f"{where}: unknown kind '{self.kind}'")
        self.args = [Arg(a, where) for a in args.split(";") if a.strip()]
        self.roles = {a.role: a for a in self.args if a.role}


def read_table(path):
    functions = []
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            line = line.split("#", 1)[0].strip()
            if line:
                functions.append(Function(line, f"{path}:{number}"))
    ids = [f.id for f in functions]
    if len(set(ids)) != len(ids) or len({f.name for f in functions}) != len(functions):
        sys.exit(f"{path}: duplicate function id or name")
    return functions


def gen_functions(functions):
    out = ["// Generated from core/tracer/mpi_functions.tbl by gen_wrappers.py: do not edit.",
           "#pragma once", "#include <cstdint>", "#include <string_view>", "",
           "namespace pskel::trace {", "",
           "enum class FunctionKind : uint8_t { " + ", ".join(KINDS) + " };", "",
           "enum class FunctionId : uint16_t {"]
    out += [f"  {f.name} = {f.id}," for f in functions]
    out += ["};", "",
            "// sends: a point-to-point send (it has a destination; Send_init and Sendrecv too).",
            "// receives: a point-to-point receive (a source, and not a probe).",
            "// creates_request: it returns a new request (non-blocking or persistent).",
            "struct FunctionInfo {", "  FunctionId id;", "  std::string_view name;",
            "  FunctionKind kind;", "  bool sends;", "  bool receives;", "  bool creates_request;",
            "};", "",
            "inline constexpr FunctionInfo kFunctions[] = {"]

    def flag(value):
        return "true" if value else "false"
    out += [f'  {{FunctionId::{f.name}, "{f.name}", FunctionKind::{f.kind}, {flag("dest" in f.roles)}, '
            f'{flag("source" in f.roles and f.kind != "probe")}, '
            f'{flag("newreq" in f.roles or "newpreq" in f.roles)}}},' for f in functions]
    index = [-1] * (max(f.id for f in functions) + 1)
    for i, f in enumerate(functions):
        index[f.id] = i
    out += ["};", "",
            "// Per id, its entry's index in kFunctions, -1 for none: the readers look up every record.",
            f"inline constexpr int16_t kFunctionIndexById[{len(index)}] = {{"]
    out += ["  " + " ".join(f"{i}," for i in index[k:k + 16]) for k in range(0, len(index), 16)]
    out += ["};", "",
            "// The function with this id, or nullptr for an id the table does not have. O(1).",
            "constexpr const FunctionInfo* find_function(uint16_t id) {",
            f"  if (id >= {len(index)} || kFunctionIndexById[id] < 0) return nullptr;",
            "  return &kFunctions[kFunctionIndexById[id]];", "}", "",
            "}  // namespace pskel::trace", ""]
    return "\n".join(out)


# Recorder calls that read Fortran request arrays themselves (MPI_Fint is MPI_Request in MPICH,
# so these cannot be overloads).
FORTRAN_CALLS = {"start_requests": "start_requests_fortran",
                 "capture_requests": "capture_requests_fortran",
                 "free_request": "free_request_fortran"}


def role_statements(fn, value_of, param_of, fortran=False):
    """The pre-call and post-call recorder statements of one wrapper."""
    pre, post = [], []
    n = value_of(fn.roles["nreq"]) if "nreq" in fn.roles else "1"
    for role in ROLE_ORDER:
        arg = fn.roles.get(role)
        if arg is None:
            continue
        phase, stmt = ROLE_CALLS[role]
        stmt = stmt.format(v=value_of(arg) if "{v}" in stmt else "", p=param_of(arg), n=n)
        if fortran:
            for c_name, f_name in FORTRAN_CALLS.items():
                stmt = stmt.replace(f"call.{c_name}(", f"call.{f_name}(")
        if arg.at_root:
            otherwise = (" else call.counts_not_significant();"
                         if role in ("scounts", "rcounts") else "")
            stmt = f"if (call.at_root()) {stmt}{otherwise}"
        (pre if phase == "pre" else post).append(stmt)
    return pre, post, n


def completion_statement(fn, n, status_view):
    """How the wrapper reports what completed or was received, from its outputs."""
    r = fn.roles

    def ptr(role):
        return r[role].name if role in r else "nullptr"
    status = "statuses" if "statuses" in r else "status"
    if status not in r:
        return None
    view = status_view(r[status], status == "statuses")
    if "waitreq" in r or "waitreqs" in r:
        return (f"call.completions({n}, {view}, {ptr('flag')}, {ptr('index')}, "
                f"{ptr('outcount')}, {ptr('indices')});")
    recorder = "probed" if fn.kind == "probe" else "received"
    return f"call.{recorder}({view}, {ptr('flag')});"


def c_signature(fn):
    return ", ".join(a.c_decl for a in fn.args) or "void"


def gen_c(functions):
    out = ["// Generated from core/tracer/mpi_functions.tbl by gen_wrappers.py: do not edit.",
           '#include "call.h"', "", "using pskel::tracer::Call;",
           "using pskel::trace::FunctionId;", "", 'extern "C" {', ""]
    for fn in functions:
        if fn.manual:
            continue
        params = ", ".join(a.name for a in fn.args)
        pre, post, n = role_statements(fn, lambda a: (f"*{a.name}" if a.role in
                                       ("newcomm", "newreq", "newpreq", "freecomm") else a.name),
                                       lambda a: a.name)
        done = completion_statement(
            fn, n, lambda a, many: f"pskel::tracer::StatusView::of_c({a.name}, {'true' if many else 'false'})")
        body = [f"PSKEL_EXPORT int {fn.name}({c_signature(fn)}) {{",
                f"  if (!pskel::tracer::tracing()) return P{fn.name}({params});",
                f"  Call call(FunctionId::{fn.name});"]
        # The tracer needs the status even where the program ignores it (wildcard receives).
        if "status" in fn.roles:
            body += ["  MPI_Status pskel_status;",
                     "  if (status == MPI_STATUS_IGNORE) status = &pskel_status;"]
        if "statuses" in fn.roles:
            body += [f"  if ({fn.roles['statuses'].name} == MPI_STATUSES_IGNORE) "
                     f"{fn.roles['statuses'].name} = call.scratch_statuses({n});"]
        body += [f"  {s}" for s in pre]
        body += [f"  const int rc = P{fn.name}({params});", "  call.finish(rc);"]
        body += [f"  {s}" for s in post]
        if done:
            body.append(f"  {done}")
        body += ["  return rc;", "}", ""]
        out += body
    out += ['}  // extern "C"', ""]
    return "\n".join(out)


def fortran_manglings(name):
    lower = name.lower()
    return [lower + "_", lower + "__", lower, name.upper()]


def gen_fortran(functions):
    out = ["// Generated from core/tracer/mpi_functions.tbl by gen_wrappers.py: do not edit.",
           "// Fortran bindings: every argument by reference, handles as MPI_Fint, ierr last.",
           '#include "call.h"', "", "using pskel::tracer::Call;",
           "using pskel::trace::FunctionId;", "",
           'extern "C" {', "extern int mpi_fortran_in_place_;  // Fortran MPI_IN_PLACE (Open MPI)", ""]

    def f_param(a):
        return f"void* {a.name}" if a.handle == "void" else f"MPI_Fint* {a.name}"

    def value_of(a):
        conv = {"MPI_Comm": "PMPI_Comm_f2c", "MPI_Datatype": "PMPI_Type_f2c",
                "MPI_Op": "PMPI_Op_f2c", "MPI_Request": "PMPI_Request_f2c"}
        if a.role == "sbuf":
            return (f"({a.name} == static_cast<void*>(&mpi_fortran_in_place_) ? MPI_IN_PLACE "
                    f": {a.name})")
        if a.handle in conv:
            return f"{conv[a.handle]}(*{a.name})"
        if a.pointer:  # int arrays: MPI_Fint is int (checked in call.h)
            return a.name
        return f"*{a.name}"

    for fn in functions:
        if fn.manual:
            continue
        fparams = ", ".join([f_param(a) for a in fn.args] + ["MPI_Fint* ierr"])
        fargs = ", ".join([a.name for a in fn.args] + ["ierr"])
        pname = "p" + fn.name.lower() + "_"
        pre, post, n = role_statements(fn, value_of, lambda a: a.name, fortran=True)
        done = completion_statement(
            fn, n, lambda a, many: f"pskel::tracer::StatusView::of_fortran({a.name}, {'true' if many else 'false'})")
        out.append(f"void {pname}({fparams});")
        body = [f"PSKEL_EXPORT void {fortran_manglings(fn.name)[0]}({fparams}) {{",
                f"  if (!pskel::tracer::tracing()) return {pname}({fargs});",
                f"  Call call(FunctionId::{fn.name});", "  call.set_flags(pskel::trace::kFlagFortran);"]
        if "status" in fn.roles:
            body += ["  MPI_Fint pskel_status[pskel::tracer::kFortranStatusSize];",
                     "  if (status == MPI_F_STATUS_IGNORE) status = pskel_status;"]
        if "statuses" in fn.roles:
            s = fn.roles["statuses"].name
            body += [f"  if ({s} == MPI_F_STATUSES_IGNORE) {s} = call.scratch_fortran_statuses({n});"]
        body += [f"  {s}" for s in pre]
        body += [f"  {pname}({fargs});", "  call.finish(*ierr);"]
        body += [f"  {s}" for s in post]
        if done:
            body.append(f"  {done}")
        body += ["}"]
        for alias in fortran_manglings(fn.name)[1:]:
            body.append(f"PSKEL_EXPORT void {alias}({fparams}) "
                        f"__attribute__((alias(\"{fortran_manglings(fn.name)[0]}\")));")
        body.append("")
        out += body
    out += ['}  // extern "C"', ""]
    return "\n".join(out)


def gen_sites(functions):
    """{name, count argument, datatype argument} per counted MPI call (-1: none): the send side
    where a call has one, else the receive side; v-collectives have per-rank counts, so calls
    only."""
    out = ["// Generated by gen_wrappers.py from mpi_functions.tbl. Do not edit.",
           "// The MPI calls pskel instrument counts: {name, count argument, datatype argument}."]
    for fn in functions:
        if fn.kind not in ("p2p", "collective", "icollective"):
            continue
        roles = {a.role: i for i, a in enumerate(fn.args) if a.role}
        count = roles.get("count", roles.get("rcount", -1))
        datatype = roles.get("type", roles.get("rtype", -1))
        if count < 0 or datatype < 0:
            count = datatype = -1
        out.append(f'{{"{fn.name}", {count}, {datatype}}},')
    return "\n".join(out) + "\n"


def main():
    if len(sys.argv) != 4 or sys.argv[2] not in ("functions", "c", "fortran", "sites"):
        sys.exit("usage: gen_wrappers.py TABLE functions|c|fortran OUTPUT")
    functions = read_table(sys.argv[1])
    text = {"functions": gen_functions, "c": gen_c, "fortran": gen_fortran,
            "sites": gen_sites}[sys.argv[2]](functions)
    with open(sys.argv[3], "w", encoding="utf-8") as f:
        f.write(text)


main()
