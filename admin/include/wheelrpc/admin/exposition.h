#pragma once
/// The Prometheus text exposition format 0.0.4 (what GET /metrics answers,
/// Content-Type `text/plain; version=0.0.4`), written so that `promtool check
/// metrics` finds nothing to say: a HELP and a TYPE line per family, names
/// checked, label values and help text escaped, every family once, histogram
/// buckets cumulative with `+Inf` equal to `_count`.

#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <wheelrpc/admin/metrics.h>

namespace wheelrpc::admin {

/// One label of a sample.
struct Label {
  std::string_view name;
  std::string_view value;
};

enum class MetricType { counter, gauge, histogram };

/// Writes one exposition. Families are written in the order begun; each
/// family's samples follow its HELP and TYPE lines.
///
/// @par Thread Safety
/// Distinct objects: safe. Shared objects: unsafe.
///
/// @par Example
/// @code
/// TextExposition out;
/// out.begin("wheelrpc_client_retries_total", MetricType::counter, "Retries started after a failed attempt.");
/// out.sample({}, 3);
/// std::string body = std::move(out).str();
/// @endcode
class TextExposition {
 public:
  /// Starts a family. Throws std::invalid_argument for a name that is not a
  /// valid metric name ([a-zA-Z_:][a-zA-Z0-9_:]*), a counter whose name does
  /// not end in `_total`, a gauge or histogram whose name does, or a family
  /// begun twice.
  void begin(std::string_view name, MetricType type, std::string_view help);
  /// A sample of the current counter or gauge family. Throws
  /// std::invalid_argument for an invalid label name or a histogram family.
  void sample(std::span<const Label> labels, double value);
  void sample(std::initializer_list<Label> labels, double value) {
    sample(std::span(labels.begin(), labels.size()), value);
  }
  /// The `_bucket` (cumulative, `le` last among the labels, then `+Inf`),
  /// `_sum` and `_count` samples of the current histogram family.
  void histogram(std::span<const Label> labels, const HistogramSnapshot& h);
  void histogram(std::initializer_list<Label> labels, const HistogramSnapshot& h) {
    histogram(std::span(labels.begin(), labels.size()), h);
  }

  std::string str() && { return std::move(out_); }
  const std::string& text() const noexcept { return out_; }

  /// The Content-Type of this format.
  static constexpr std::string_view kContentType = "text/plain; version=0.0.4; charset=utf-8";

 private:
  void write_labels(std::span<const Label> labels, std::string_view le = {});
  std::string out_;
  std::string family_;
  MetricType type_ = MetricType::gauge;
  std::vector<std::string> begun_;
};

/// A label value escaped for the text format: backslash, double quote and
/// newline as \\, \" and \n.
std::string escape_label_value(std::string_view value);
/// Help text escaped: backslash and newline as \\ and \n.
std::string escape_help(std::string_view help);
/// A sample value: integers without an exponent or a fraction, others in
/// the shortest form that reads back as the same double, and `+Inf`,
/// `-Inf`, `NaN`.
std::string format_value(double value);
/// True for a valid metric name ([a-zA-Z_:][a-zA-Z0-9_:]*).
bool valid_metric_name(std::string_view name) noexcept;
/// True for a valid label name ([a-zA-Z_][a-zA-Z0-9_]*, not starting with __).
bool valid_label_name(std::string_view name) noexcept;

}  // namespace wheelrpc::admin
