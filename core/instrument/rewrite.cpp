#include "rewrite.h"

#include <clang/AST/ASTConsumer.h>
#include <clang/AST/RecursiveASTVisitor.h>
#include <clang/Basic/SourceManager.h>
#include <clang/Frontend/CompilerInstance.h>
#include <clang/Frontend/FrontendAction.h>
#include <clang/Frontend/TextDiagnosticBuffer.h>
#include <clang/Lex/Lexer.h>
#include <clang/Rewrite/Core/Rewriter.h>
#include <clang/Tooling/CompilationDatabase.h>
#include <clang/Tooling/Tooling.h>

#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <string_view>

namespace pskel::instrument {
namespace {

// The MPI calls counted, from core/tracer/mpi_functions.tbl (gen_wrappers.py sites).
struct MpiSite {
  std::string_view name;
  int count_arg;     // -1: the call has no single count (v-collectives): calls only
  int datatype_arg;
};
constexpr MpiSite kMpiSites[] = {
#include "mpi_sites.inc"
};

const MpiSite* mpi_site(std::string_view name) {
  for (const MpiSite& site : kMpiSites)
    if (site.name == name) return &site;
  return nullptr;
}

std::string c_string_literal(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\%03o", static_cast<unsigned char>(c));
      out += escaped;
      continue;
    }
    out += c;
  }
  return out + "\"";
}

// The name of a file's table of counters: its own, because a rewritten header and the file
// that includes it share a translation unit.
std::string table_name(std::string_view key_name) {
  uint64_t hash = 0xcbf29ce484222325ull;  // FNV-1a
  for (char c : key_name) hash = (hash ^ static_cast<unsigned char>(c)) * 0x100000001b3ull;
  char name[40];
  std::snprintf(name, sizeof name, "pskel_c_%016llx_", static_cast<unsigned long long>(hash));
  return name;
}

// A file being rewritten (the source parsed, or a header named with it) and its counters.
struct Target {
  std::string path;               // real path
  std::string key_name;           // the file's name in counter keys
  std::string table;              // table_name(key_name)
  clang::FileID first_id;         // where it was first seen (its text if nothing is inserted)
  std::vector<std::string> keys;
  std::map<std::string, int> seen;
};

class Instrumenter : public clang::RecursiveASTVisitor<Instrumenter> {
 public:
  Instrumenter(clang::ASTContext& context, clang::Rewriter& rewriter,
               const std::map<std::string, std::string>& key_names)
      : context_(context), sm_(context.getSourceManager()), rewriter_(rewriter),
        key_names_(key_names) {}

  bool VisitForStmt(clang::ForStmt* s) { return count_body(s->getBody(), s->getForLoc(), "for"); }
  bool VisitCXXForRangeStmt(clang::CXXForRangeStmt* s) {
    return count_body(s->getBody(), s->getForLoc(), "for");
  }
  bool VisitWhileStmt(clang::WhileStmt* s) {
    return count_body(s->getBody(), s->getWhileLoc(), "while");
  }
  bool VisitDoStmt(clang::DoStmt* s) { return count_body(s->getBody(), s->getDoLoc(), "do"); }
  bool VisitIfStmt(clang::IfStmt* s) {
    count_body(s->getThen(), s->getIfLoc(), "then");
    if (s->getElse() != nullptr) count_body(s->getElse(), s->getIfLoc(), "else");
    return true;
  }
  bool VisitCallExpr(clang::CallExpr* call);

  std::map<std::string, Target>& targets() { return targets_; }

 private:
  // The file `loc` is written in, if it is one being rewritten and `loc` is not produced by a
  // macro; else null.
  Target* target_of(clang::SourceLocation loc) {
    if (loc.isInvalid() || loc.isMacroID()) return nullptr;
    const clang::FileID id = sm_.getFileID(loc);
    const clang::FileEntry* entry = sm_.getFileEntryForID(id);
    if (entry == nullptr) return nullptr;
    const std::string path = entry->tryGetRealPathName().str();
    const auto named = key_names_.find(path);
    if (named == key_names_.end()) return nullptr;
    auto [it, added] = targets_.try_emplace(path);
    if (added) it->second = Target{path, named->second, table_name(named->second), id, {}, {}};
    return &it->second;
  }
  // Begin, end and `also` all in one file being rewritten: that file, else null.
  Target* target_of(const clang::Stmt* s, clang::SourceLocation also) {
    if (s == nullptr) return nullptr;
    Target* t = target_of(s->getBeginLoc());
    return t != nullptr && t == target_of(s->getEndLoc()) && t == target_of(also) ? t : nullptr;
  }

  // A new counter "file:line:kind" (a second one of a kind on a line gets "#2"); its index.
  size_t add_counter(Target& t, clang::SourceLocation at, std::string_view kind) {
    std::string key = t.key_name + ":" + std::to_string(sm_.getSpellingLineNumber(at)) + ":" +
                      std::string(kind);
    const int seen = ++t.seen[key];
    if (seen > 1) key += "#" + std::to_string(seen);
    t.keys.push_back(key);
    return t.keys.size() - 1;
  }
  static std::string counter(const Target& t, size_t index) {
    return t.table + "[" + std::to_string(index) + "].count";
  }

  // Just past the end of statement s: after its ';' when one follows its last token (an
  // expression statement, a do-while), else after its last token ('}').
  clang::SourceLocation end_of(const clang::Stmt* s) const {
    const clang::LangOptions& lo = context_.getLangOpts();
    const clang::SourceLocation after_semi =
        clang::Lexer::findLocationAfterToken(s->getEndLoc(), clang::tok::semi, sm_, lo, false);
    if (after_semi.isValid()) return after_semi;
    return clang::Lexer::getLocForEndOfToken(s->getEndLoc(), 0, sm_, lo);
  }

  bool count_body(clang::Stmt* body, clang::SourceLocation keyword, std::string_view kind) {
    Target* t = target_of(body, keyword);
    if (t == nullptr) return true;
    const clang::SourceLocation end = end_of(body);
    auto* block = llvm::dyn_cast<clang::CompoundStmt>(body);
    if (block == nullptr && (end.isInvalid() || end.isMacroID())) return true;
    const std::string increment = "++" + counter(*t, add_counter(*t, keyword, kind)) + ";";
    if (block != nullptr) {
      rewriter_.InsertTextAfterToken(block->getLBracLoc(), " " + increment);
      return true;
    }
    rewriter_.InsertTextBefore(body->getBeginLoc(), "{ " + increment + " ");
    rewriter_.InsertTextAfter(end, " }");
    return true;
  }

  // An argument as written in the file ("MPI_DOUBLE", not what the macro expands to), or ""
  // if it is not all written there.
  std::string written_text(const clang::Expr* e) {
    const clang::CharSourceRange range = sm_.getExpansionRange(e->getSourceRange());
    if (target_of(range.getBegin()) == nullptr || target_of(range.getEnd()) == nullptr) return "";
    return clang::Lexer::getSourceText(range, sm_, context_.getLangOpts()).str();
  }

  // The opening goes after what is already inserted at the call's start: a loop body's brace,
  // when the call is the body (the visitor sees statements before the calls in them).
  void wrap_call(clang::CallExpr* call, const std::string& before,
                 const std::string& function = "") {
    rewriter_.InsertTextAfter(call->getBeginLoc(), function + "(" + before);
    rewriter_.InsertTextAfter(
        clang::Lexer::getLocForEndOfToken(call->getEndLoc(), 0, sm_, context_.getLangOpts()),
        ")");
  }

  clang::ASTContext& context_;
  clang::SourceManager& sm_;
  clang::Rewriter& rewriter_;
  const std::map<std::string, std::string>& key_names_;
  std::map<std::string, Target> targets_;
};

bool Instrumenter::VisitCallExpr(clang::CallExpr* call) {
  const clang::FunctionDecl* callee = call->getDirectCallee();
  Target* t = target_of(call, call->getBeginLoc());
  if (callee == nullptr || !callee->getIdentifier() || t == nullptr) return true;
  const std::string name = callee->getName().str();
  if (name == "MPI_Init" || name == "MPI_Init_thread") {
    wrap_call(call, "", "pskel_counters_start_after");
    return true;
  }
  if (name == "MPI_Finalize") {
    wrap_call(call,
              "PMPI_Comm_rank(MPI_COMM_WORLD, &pskel_rank_), PMPI_Comm_size(MPI_COMM_WORLD, "
              "&pskel_size_), pskel_counters_finish(pskel_rank_, pskel_size_), ");
    return true;
  }
  const MpiSite* site = mpi_site(name);
  if (site == nullptr) return true;
  const size_t calls = add_counter(*t, call->getBeginLoc(), name);
  std::string before = "++" + counter(*t, calls) + ", ";
  // Bytes need the count and datatype evaluated a second time: only where that is harmless.
  const auto args = call->getNumArgs();
  if (site->count_arg >= 0 && static_cast<unsigned>(site->datatype_arg) < args) {
    const clang::Expr* count = call->getArg(static_cast<unsigned>(site->count_arg));
    const clang::Expr* type = call->getArg(static_cast<unsigned>(site->datatype_arg));
    const std::string count_text = written_text(count), type_text = written_text(type);
    if (!count->HasSideEffects(context_) && !type->HasSideEffects(context_) &&
        !count_text.empty() && !type_text.empty()) {
      const size_t bytes = add_counter(*t, call->getBeginLoc(), name + ".bytes");
      const std::string datatype = "(" + type_text + ")";
      before += counter(*t, bytes) + " += (unsigned long long)(" + count_text + ") * (" +
                datatype + " == MPI_DATATYPE_NULL ? 0ull : " + "(PMPI_Type_size(" + datatype +
                ", &pskel_type_size_), " +
                "(unsigned long long)pskel_type_size_)), ";
    }
  }
  wrap_call(call, before);
  return true;
}

// The file's table of counters, put first in the file and guarded (a rewritten header may be
// included twice); a #line directive after it keeps the program's own line numbers in
// diagnostics.
std::string preamble(const std::vector<std::string>& keys, const std::string& key_name,
                     const std::string& path) {
  const std::string table = table_name(key_name);
  const std::string count = std::to_string(keys.size());
  std::string text = "#include <pskel_counters.h>\n#ifndef " + table + "DEFINED\n#define " +
                     table + "DEFINED\n";
  text += "static struct pskel_counter " + table + "[" + count + "] = {";
  for (size_t i = 0; i < keys.size(); ++i)
    text += std::string(i ? ", " : "") + "{0, " + c_string_literal(keys[i]) + "}";
  text += "};\n__attribute__((constructor)) static void " + table + "register(void) {\n" +
          "  pskel_counters_register(" + table + ", " + count + ");\n}\n#endif\n";
  return text + "#line 1 " + c_string_literal(path) + "\n";
}

class Consumer : public clang::ASTConsumer {
 public:
  Consumer(const std::map<std::string, std::string>& key_names, std::vector<Rewritten>* out)
      : key_names_(key_names), out_(out) {}

  void HandleTranslationUnit(clang::ASTContext& context) override {
    if (context.getDiagnostics().hasErrorOccurred()) return;
    clang::SourceManager& sm = context.getSourceManager();
    clang::Rewriter rewriter(sm, context.getLangOpts());
    Instrumenter instrumenter(context, rewriter, key_names_);
    instrumenter.TraverseDecl(context.getTranslationUnitDecl());
    // The source itself is always written, even with nothing counted in it.
    const clang::FileID main = sm.getMainFileID();
    const clang::FileEntry* main_entry = sm.getFileEntryForID(main);
    const std::string main_path = main_entry ? main_entry->tryGetRealPathName().str() : "";
    auto& targets = instrumenter.targets();
    if (!targets.count(main_path) && key_names_.count(main_path))
      targets[main_path] = Target{main_path, key_names_.at(main_path),
                                  table_name(key_names_.at(main_path)), main, {}, {}};
    for (auto& [path, target] : targets) {
      std::string text;
      if (const clang::RewriteBuffer* buffer = rewriter.getRewriteBufferFor(target.first_id))
        text.assign(buffer->begin(), buffer->end());
      else
        text = sm.getBufferData(target.first_id).str();
      if (!target.keys.empty()) text = preamble(target.keys, target.key_name, path) + text;
      out_->push_back(Rewritten{path, std::move(text), std::move(target.keys)});
    }
  }

 private:
  const std::map<std::string, std::string>& key_names_;
  std::vector<Rewritten>* out_;
};

class Action : public clang::ASTFrontendAction {
 public:
  Action(const std::map<std::string, std::string>& key_names, std::vector<Rewritten>* out)
      : key_names_(key_names), out_(out) {}
  std::unique_ptr<clang::ASTConsumer> CreateASTConsumer(clang::CompilerInstance&,
                                                        llvm::StringRef) override {
    return std::make_unique<Consumer>(key_names_, out_);
  }

 private:
  const std::map<std::string, std::string>& key_names_;
  std::vector<Rewritten>* out_;
};

class ActionFactory : public clang::tooling::FrontendActionFactory {
 public:
  ActionFactory(const std::map<std::string, std::string>& key_names, std::vector<Rewritten>* out)
      : key_names_(key_names), out_(out) {}
  std::unique_ptr<clang::FrontendAction> create() override {
    return std::make_unique<Action>(key_names_, out_);
  }

 private:
  const std::map<std::string, std::string>& key_names_;
  std::vector<Rewritten>* out_;
};

// Keeps clang's diagnostics for the error line instead of printing them.
class FirstError : public clang::DiagnosticConsumer {
 public:
  void HandleDiagnostic(clang::DiagnosticsEngine::Level level,
                        const clang::Diagnostic& info) override {
    DiagnosticConsumer::HandleDiagnostic(level, info);
    if (level < clang::DiagnosticsEngine::Error || !first_.empty()) return;
    llvm::SmallString<256> message;
    info.FormatDiagnostic(message);
    first_ = message.str().str();
    if (info.hasSourceManager() && info.getLocation().isValid()) {
      const clang::PresumedLoc at = info.getSourceManager().getPresumedLoc(info.getLocation());
      if (at.isValid())
        first_ = std::string(at.getFilename()) + ":" + std::to_string(at.getLine()) + ": " +
                 first_;
    }
  }
  const std::string& first() const { return first_; }

 private:
  std::string first_;
};

}  // namespace

Result<std::vector<Rewritten>> rewrite_source(const std::string& source,
                                              const std::map<std::string, std::string>& key_names,
                                              const std::vector<std::string>& compiler_args) {
  std::vector<std::string> args = compiler_args;
  args.push_back("-resource-dir=" PSKEL_CLANG_RESOURCE_DIR);
  // mpi.h when the program's flags do not say where it is (the user's own -I come first).
  args.push_back("-idirafter");
  args.push_back(PSKEL_MPI_INCLUDE_DIR);
  clang::tooling::FixedCompilationDatabase database(".", args);
  clang::tooling::ClangTool tool(database, {source});
  FirstError errors;
  tool.setDiagnosticConsumer(&errors);
  std::vector<Rewritten> out;
  ActionFactory factory(key_names, &out);
  if (tool.run(&factory) != 0 || !errors.first().empty())
    return Error{source, "does not compile: " + (errors.first().empty()
                                                     ? std::string("clang failed")
                                                     : errors.first())};
  return out;
}

}  // namespace pskel::instrument
