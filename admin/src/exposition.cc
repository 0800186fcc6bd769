#include <wheelrpc/admin/exposition.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <stdexcept>

namespace wheelrpc::admin {

namespace {

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

bool alpha_(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool digit(char c) { return c >= '0' && c <= '9'; }

const char* type_name(MetricType t) {
  switch (t) {
    case MetricType::counter: return "counter";
    case MetricType::gauge: return "gauge";
    case MetricType::histogram: return "histogram";
  }
  return "untyped";
}

}  // namespace

bool valid_metric_name(std::string_view name) noexcept {
  if (name.empty() || !(alpha_(name[0]) || name[0] == ':')) return false;
  return std::all_of(name.begin(), name.end(), [](char c) { return alpha_(c) || digit(c) || c == ':'; });
}

bool valid_label_name(std::string_view name) noexcept {
  if (name.empty() || !alpha_(name[0]) || name.substr(0, 2) == "__") return false;
  return std::all_of(name.begin(), name.end(), [](char c) { return alpha_(c) || digit(c); });
}

std::string escape_label_value(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (const char c : value) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string escape_help(std::string_view help) {
  std::string out;
  out.reserve(help.size());
  for (const char c : help) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string format_value(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[64];
  if (v == std::floor(v) && std::fabs(v) < 1e15) {
    std::snprintf(buf, sizeof buf, "%.0f", v);
    return buf;
  }
  // The shortest text that reads back as the same double ("0.1", not
  // "0.10000000000000001").
  // Fixed notation ("0.0005", readable as an `le` label) when it fits, else
  // the shortest of either.
  if (const auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::fixed); r.ec == std::errc()) {
    return std::string(buf, r.ptr);
  }
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

void TextExposition::begin(std::string_view name, MetricType type, std::string_view help) {
  if (!valid_metric_name(name)) throw std::invalid_argument("invalid metric name '" + std::string(name) + "'");
  const bool total = ends_with(name, "_total");
  if (type == MetricType::counter && !total) {
    throw std::invalid_argument("counter '" + std::string(name) + "' must end in _total");
  }
  if (type != MetricType::counter && total) {
    throw std::invalid_argument("only a counter's name ends in _total: '" + std::string(name) + "'");
  }
  if (std::find(begun_.begin(), begun_.end(), name) != begun_.end()) {
    throw std::invalid_argument("metric family '" + std::string(name) + "' written twice");
  }
  begun_.emplace_back(name);
  family_ = name;
  type_ = type;
  out_ += "# HELP ";
  out_ += name;
  out_ += ' ';
  out_ += escape_help(help);
  out_ += "\n# TYPE ";
  out_ += name;
  out_ += ' ';
  out_ += type_name(type);
  out_ += '\n';
}

void TextExposition::write_labels(std::span<const Label> labels, std::string_view le) {
  if (labels.empty() && le.empty()) return;
  out_ += '{';
  bool first = true;
  for (const auto& l : labels) {
    if (!valid_label_name(l.name) || l.name == "le") {
      throw std::invalid_argument("invalid label name '" + std::string(l.name) + "' on " + family_);
    }
    if (!first) out_ += ',';
    first = false;
    out_ += l.name;
    out_ += "=\"";
    out_ += escape_label_value(l.value);
    out_ += '"';
  }
  if (!le.empty()) {
    if (!first) out_ += ',';
    out_ += "le=\"";
    out_ += le;
    out_ += '"';
  }
  out_ += '}';
}

void TextExposition::sample(std::span<const Label> labels, double value) {
  if (family_.empty()) throw std::invalid_argument("sample() before begin()");
  if (type_ == MetricType::histogram) throw std::invalid_argument(family_ + " is a histogram: use histogram()");
  out_ += family_;
  write_labels(labels);
  out_ += ' ';
  out_ += format_value(value);
  out_ += '\n';
}

void TextExposition::histogram(std::span<const Label> labels, const HistogramSnapshot& h) {
  if (type_ != MetricType::histogram || family_.empty()) {
    throw std::invalid_argument("histogram() needs a histogram family, current: '" + family_ + "'");
  }
  std::uint64_t cumulative = 0;
  for (std::size_t i = 0; i < h.bounds.size(); ++i) {
    cumulative += i < h.counts.size() ? h.counts[i] : 0;
    out_ += family_;
    out_ += "_bucket";
    write_labels(labels, format_value(h.bounds[i]));
    out_ += ' ';
    out_ += format_value(static_cast<double>(cumulative));
    out_ += '\n';
  }
  out_ += family_;
  out_ += "_bucket";
  write_labels(labels, "+Inf");
  out_ += ' ';
  out_ += format_value(static_cast<double>(h.count));
  out_ += '\n';
  out_ += family_;
  out_ += "_sum";
  write_labels(labels);
  out_ += ' ';
  out_ += format_value(h.sum);
  out_ += '\n';
  out_ += family_;
  out_ += "_count";
  write_labels(labels);
  out_ += ' ';
  out_ += format_value(static_cast<double>(h.count));
  out_ += '\n';
}

}  // namespace wheelrpc::admin
