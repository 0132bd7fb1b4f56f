// The prediction export: the compact file the epilog worker writes (atomically: temp file +
// rename) whenever predictions change, and job_submit_pskel.so reads into memory inside
// slurmctld. It holds what job_submit needs and nothing else: no SQLite there.
// The format is specified in docs/export-format.md. In short (text, one record per line):
//
//   pskel-export 3
//   P <partition> <max minutes|unlimited> <default|->
//   E <uid> <ntasks> <nodes> <partition> <predicted seconds> <prediction id> <application key>
//     <input key>
//   M <uid> <application key> <shape key> <model id> <run-time model ...>
//   end <E lines> <P lines> <M lines> <crc32c of every byte before this line, 8 hex digits>
//
// A file whose last line is not a matching `end` line is truncated or corrupt and is rejected
// as a whole. The writer writes version 3; the parser also reads version 2 (no M lines, no M
// count) and version 1, whose E lines have no node count (1 node), so that a slurmctld
// upgraded before the worker keeps its predictions.
// Thread safety: all functions are reentrant.
#pragma once

#include <cstdint>
#include <string>
#include <span>
#include <string_view>
#include <vector>

#include "util/result.h"

namespace pskel::exportfile {

inline constexpr uint32_t kUnlimited = 0xffffffff;  // a partition without MaxTime
inline constexpr size_t kMaxFileBytes = 256u << 20;   // bigger files are refused unread

// The largest predicted run time that may become a time limit: one year. The number comes from
// the user's own calibration run, and job_submit turns it into text and into a uint32 count of
// minutes (NO_VAL and INFINITE reserved). At this bound, with pskel.conf's largest Margin (100)
// and Pad (7 days), the limit is 53,095,680 minutes, far below NO_VAL, and the number is 10
// characters with one decimal. No batch job runs for a year.
inline constexpr double kMaxPredictedSeconds = 365.0 * 86400;

// True for a prediction the export may carry: finite, 0 to kMaxPredictedSeconds.
bool valid_predicted_seconds(double seconds);

struct Partition {
  std::string name;
  uint32_t max_minutes = kUnlimited;
  bool is_default = false;
};

struct Entry {
  uint32_t uid = 0;
  uint32_t ntasks = 0;
  uint32_t nodes = 1;
  std::string partition;
  std::string app;  // application key (app_key.h)
  double predicted_seconds = 0;
  int64_t prediction_id = 0;
  // The traced job's inputs (input_key of its script arguments, 16 hex digits), or "-": any
  // (unknown, or an export before version 3). A job with other inputs gets the application's
  // run-time model instead, if it has one.
  std::string input = "-";
};

// A run-time model of an application over its jobs' inputs (docs/model.md), in the form
// job_submit evaluates: seconds = intercept + sum of weight x g, g = constant + sum of
// coefficient x prod parameter^exponent x log2(parameter)^log_exponent, taken as 0 when below 0
// if `clamp` (a count). Parameters: the task count, then the numbers of the job script's
// arguments (job_args.h), for jobs whose arguments have the shape `shape_key`.
struct ModelFactor {
  uint32_t parameter = 0;
  double exponent = 0;
  int log_exponent = 0;
};
struct ModelTerm {
  double coefficient = 0;
  std::vector<ModelFactor> factors;
};
struct ModelGroup {
  double weight = 1;
  bool clamp = false;
  double constant = 0;
  std::vector<ModelTerm> terms;
};
struct Model {
  uint32_t uid = 0;
  std::string app;
  uint64_t shape_key = 0;
  int64_t model_id = 0;         // the application's id in the store
  uint32_t parameters = 1;      // how many (the task count included)
  double low_ratio = 1;         // the interval: predicted x low_ratio .. x high_ratio
  double high_ratio = 1;
  double intercept = 0;
  std::vector<ModelGroup> groups;
};

// Limits of a model the export carries (a parser refuses more).
inline constexpr uint32_t kMaxModelParameters = 65;
inline constexpr size_t kMaxModelGroups = 64;
inline constexpr size_t kMaxModelTerms = 4;
inline constexpr size_t kMaxModelFactors = 3;

// A model's M line (without its newline), "" for a model that is not valid_model; and back
// (the store keeps each application's model in this form).
std::string model_line(const Model& model);
Result<Model> parse_model_line(std::string_view line);

// The modelled seconds for `parameters` (Model::parameters of them, all above zero), or NaN.
double model_seconds(const Model& model, std::span<const double> parameters);
bool valid_model(const Model& model);

struct Data {
  std::vector<Partition> partitions;
  std::vector<Entry> entries;
  std::vector<Model> models;
};

// A word that may appear in a record: 1-128 bytes, printable ASCII without blanks.
bool valid_word(std::string_view word);

// "4 tasks on 2 nodes": the layout a prediction is keyed by, as the log, AdminComment and
// `pskel db show` say it.
std::string layout_text(uint32_t ntasks, uint32_t nodes);

// An input key an entry may have: "-" or 16 lower-case hex digits.
bool valid_input(std::string_view input);
// An entry parse() would accept: valid words, ntasks >= 1, nodes >= 1, valid_predicted_seconds,
// valid_input.
bool valid_entry(const Entry& entry);

// The file's text. Entries that are not valid_entry and partitions whose name is not a
// valid_word are left out: one bad row must not make every user's predictions unreadable.
std::string format(const Data& data);

// Parses and verifies a whole file; `origin` names it in errors ("<origin>:<line>: <what>").
Result<Data> parse(std::string_view text, const std::string& origin);

// Writes format(data) to `path` atomically: a temporary file beside it, fsync, rename, fsync of
// the directory. A reader sees either the old file or the new one, never a mix.
Result<bool> write_atomic(const std::string& path, const Data& data);

// Reads a regular file of at most kMaxFileBytes, never through a symlink or from a FIFO; the
// errors are read_regular_file's (util/file_read.h).
Result<std::string> read_file(const std::string& path);

}  // namespace pskel::exportfile
