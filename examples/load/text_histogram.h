#pragma once
/// text_histogram: a latency histogram as one line of text, the last line of
/// the load generator's text summary.

#include <chrono>
#include <string>

#include "support/latency_histogram.h"

namespace wheelrpc::examples::load {

/// The line "latency histogram (ms): <0.1 B 0.25 B 0.5 B ... 250 B >250 B":
/// 12 fixed, log-spaced buckets (edges 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 25, 50,
/// 100 and 250 ms), each shown as its label then one bar character B. A
/// label is the bucket's upper edge ("0.25" is [0.1, 0.25) ms), except the
/// first ("<0.1") and the last (">250", 250 ms and more). B is one of
/// U+2581..U+2588 (lower one eighth block .. full block), scaled so that the
/// fullest bucket gets the full block and any non-empty bucket at least the
/// lowest one, or a space for an empty bucket (all spaces when h is empty).
/// `unit` is what one recorded value of h stands for (1 us for the load
/// generator's tally); the edges are rounded down to h's bucket bounds
/// (LatencyHistogram::count_below). UTF-8, no trailing newline.
std::string text_histogram(const support::LatencyHistogram& h, std::chrono::nanoseconds unit);

}  // namespace wheelrpc::examples::load
