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

class Instrumenter : public clang::RecursiveASTVisitor<Instrumenter> {
 public:
  Instrumenter(clang::ASTContext& context, clang::Rewriter& rewriter, std::string key_name)
      : context_(context), sm_(context.getSourceManager()), rewriter_(rewriter),
        key_name_(std::move(key_name)) {}

  bool VisitForStmt(clang::ForStmt* s) { return count_body(s->getBody(), s->getForLoc(), "for"); }
  bool VisitCXXForRangeStmt(clang::CXXForRangeStmt* s) {
    return count_body(s->getBody(), s->getForLoc(), "for");
  }
  bool VisitWhileStmt(clang::WhileStmt* s) {
    return count_body(s->getBody(), s->getWhileLoc(), "while");
  }
  bool VisitDoStmt(clang::DoStmt* s) { return count_body(s->getBody(), s->getDoLoc(), "do"); }
  bool VisitIfStmt(clang::IfStmt* s) {
    if (!rewritable(s->getBeginLoc())) return true;
    count_body(s->getThen(), s->getIfLoc(), "then");
    if (s->getElse() != nullptr) count_body(s->getElse(), s->getIfLoc(), "else");
    return true;
  }
  bool VisitCallExpr(clang::CallExpr* call);

  const std::vector<std::string>& keys() const { return keys_; }

 private:
  // Written in the file being rewritten, not produced by a macro.
  bool rewritable(clang::SourceLocation loc) const {
    return loc.isValid() && !loc.isMacroID() && sm_.isWrittenInMainFile(loc);
  }
  bool rewritable(const clang::Stmt* s) const {
    return s != nullptr && rewritable(s->getBeginLoc()) && rewritable(s->getEndLoc());
  }

  // A new counter "file:line:kind" (a second one of a kind on a line gets "#2"); its index.
  size_t add_counter(clang::SourceLocation at, std::string_view kind) {
    std::string key = key_name_ + ":" + std::to_string(sm_.getSpellingLineNumber(at)) + ":" +
                      std::string(kind);
    const int seen = ++seen_[key];
    if (seen > 1) key += "#" + std::to_string(seen);
    keys_.push_back(key);
    return keys_.size() - 1;
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
    if (!rewritable(keyword) || !rewritable(body)) return true;
    const std::string increment = "++pskel_c_[" + std::to_string(add_counter(keyword, kind)) +
                                  "].count;";
    if (auto* block = llvm::dyn_cast<clang::CompoundStmt>(body)) {
      rewriter_.InsertTextAfterToken(block->getLBracLoc(), " " + increment);
      return true;
    }
    const clang::SourceLocation end = end_of(body);
    if (end.isInvalid() || end.isMacroID()) return true;
    rewriter_.InsertTextBefore(body->getBeginLoc(), "{ " + increment + " ");
    rewriter_.InsertTextAfter(end, " }");
    return true;
  }

  // An argument as written in the file ("MPI_DOUBLE", not what the macro expands to), or ""
  // if it is not all written there.
  std::string written_text(const clang::Expr* e) const {
    const clang::CharSourceRange range = sm_.getExpansionRange(e->getSourceRange());
    if (!rewritable(range.getBegin()) || !rewritable(range.getEnd())) return "";
    return clang::Lexer::getSourceText(range, sm_, context_.getLangOpts()).str();
  }

  // The opening goes after what is already inserted at the call's start: a loop body's brace,
  // when the call is the body (the visitor sees statements before the calls in them).
  void wrap_call(clang::CallExpr* call, const std::string& before) {
    rewriter_.InsertTextAfter(call->getBeginLoc(), "(" + before);
    rewriter_.InsertTextAfter(
        clang::Lexer::getLocForEndOfToken(call->getEndLoc(), 0, sm_, context_.getLangOpts()),
        ")");
  }

  clang::ASTContext& context_;
  clang::SourceManager& sm_;
  clang::Rewriter& rewriter_;
  std::string key_name_;
  std::vector<std::string> keys_;
  std::map<std::string, int> seen_;
};

bool Instrumenter::VisitCallExpr(clang::CallExpr* call) {
  const clang::FunctionDecl* callee = call->getDirectCallee();
  if (callee == nullptr || !callee->getIdentifier() || !rewritable(call)) return true;
  const std::string name = callee->getName().str();
  if (name == "MPI_Init" || name == "MPI_Init_thread") {
    wrap_call(call, "pskel_counters_start(), ");
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
  const size_t calls = add_counter(call->getBeginLoc(), name);
  std::string before = "++pskel_c_[" + std::to_string(calls) + "].count, ";
  // Bytes need the count and datatype evaluated a second time: only where that is harmless.
  const auto args = call->getNumArgs();
  if (site->count_arg >= 0 && static_cast<unsigned>(site->datatype_arg) < args) {
    const clang::Expr* count = call->getArg(static_cast<unsigned>(site->count_arg));
    const clang::Expr* type = call->getArg(static_cast<unsigned>(site->datatype_arg));
    const std::string count_text = written_text(count), type_text = written_text(type);
    if (!count->HasSideEffects(context_) && !type->HasSideEffects(context_) &&
        !count_text.empty() && !type_text.empty()) {
      const size_t bytes = add_counter(call->getBeginLoc(), name + ".bytes");
      const std::string t = "(" + type_text + ")";
      before += "pskel_c_[" + std::to_string(bytes) + "].count += (unsigned long long)(" +
                count_text + ") * (" + t + " == MPI_DATATYPE_NULL ? 0ull : " +
                "(PMPI_Type_size(" + t + ", &pskel_type_size_), " +
                "(unsigned long long)pskel_type_size_)), ";
    }
  }
  wrap_call(call, before);
  return true;
}

// The file's table of counters and what the rewritten calls use, put first in the file; a
// #line directive after it keeps the program's own line numbers in diagnostics.
std::string preamble(const std::vector<std::string>& keys, const std::string& path) {
  std::string text = "#include <pskel_counters.h>\n";
  text += "static struct pskel_counter pskel_c_[" + std::to_string(keys.size()) + "] = {";
  for (size_t i = 0; i < keys.size(); ++i)
    text += std::string(i ? ", " : "") + "{0, " + c_string_literal(keys[i]) + "}";
  text +=
      "};\n"
      "static int pskel_type_size_ __attribute__((unused));\n"
      "static int pskel_rank_ __attribute__((unused));\n"
      "static int pskel_size_ __attribute__((unused));\n"
      "__attribute__((constructor)) static void pskel_register_counters_(void) {\n"
      "  pskel_counters_register(pskel_c_, " +
      std::to_string(keys.size()) + ");\n}\n";
  return text + "#line 1 " + c_string_literal(path) + "\n";
}

class Consumer : public clang::ASTConsumer {
 public:
  Consumer(std::string key_name, std::string path, Rewritten* out)
      : key_name_(std::move(key_name)), path_(std::move(path)), out_(out) {}

  void HandleTranslationUnit(clang::ASTContext& context) override {
    if (context.getDiagnostics().hasErrorOccurred()) return;
    clang::Rewriter rewriter(context.getSourceManager(), context.getLangOpts());
    Instrumenter instrumenter(context, rewriter, key_name_);
    instrumenter.TraverseDecl(context.getTranslationUnitDecl());
    const clang::FileID main = context.getSourceManager().getMainFileID();
    std::string text;
    if (const clang::RewriteBuffer* buffer = rewriter.getRewriteBufferFor(main))
      text.assign(buffer->begin(), buffer->end());
    else
      text = context.getSourceManager().getBufferData(main).str();
    out_->keys = instrumenter.keys();
    out_->text = out_->keys.empty() ? text : preamble(out_->keys, path_) + text;
  }

 private:
  std::string key_name_, path_;
  Rewritten* out_;
};

class Action : public clang::ASTFrontendAction {
 public:
  Action(std::string key_name, Rewritten* out) : key_name_(std::move(key_name)), out_(out) {}
  std::unique_ptr<clang::ASTConsumer> CreateASTConsumer(clang::CompilerInstance&,
                                                        llvm::StringRef file) override {
    return std::make_unique<Consumer>(key_name_, file.str(), out_);
  }

 private:
  std::string key_name_;
  Rewritten* out_;
};

class ActionFactory : public clang::tooling::FrontendActionFactory {
 public:
  ActionFactory(std::string key_name, Rewritten* out) : key_name_(std::move(key_name)), out_(out) {}
  std::unique_ptr<clang::FrontendAction> create() override {
    return std::make_unique<Action>(key_name_, out_);
  }

 private:
  std::string key_name_;
  Rewritten* out_;
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

Result<Rewritten> rewrite_file(const std::string& path, const std::string& key_name,
                               const std::vector<std::string>& compiler_args) {
  std::vector<std::string> args = compiler_args;
  args.push_back("-resource-dir=" PSKEL_CLANG_RESOURCE_DIR);
  // mpi.h when the program's flags do not say where it is (the user's own -I come first).
  args.push_back("-idirafter");
  args.push_back(PSKEL_MPI_INCLUDE_DIR);
  clang::tooling::FixedCompilationDatabase database(".", args);
  clang::tooling::ClangTool tool(database, {path});
  FirstError errors;
  tool.setDiagnosticConsumer(&errors);
  Rewritten out;
  ActionFactory factory(key_name, &out);
  if (tool.run(&factory) != 0 || !errors.first().empty())
    return Error{path, "does not compile: " +
                           (errors.first().empty() ? std::string("clang failed") : errors.first())};
  return out;
}

}  // namespace pskel::instrument
