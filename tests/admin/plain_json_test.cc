// plain_json: the admin answers' numbers as the docs show them (50, 10.2),
// never in exponent form, and every other value as Boost.JSON writes it.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>

#include "plain_json.h"

namespace {
namespace json = boost::json;
using wheelrpc::admin::detail::plain_json;

TEST(PlainJson, IntegralDoublesAreWrittenAsIntegers) {
  EXPECT_EQ(plain_json(json::value(50.0)), "50");
  EXPECT_EQ(plain_json(json::value(0.0)), "0");
  EXPECT_EQ(plain_json(json::value(-3.0)), "-3");
  EXPECT_EQ(plain_json(json::value(1e15)), "1000000000000000");
}

TEST(PlainJson, OtherDoublesAreWrittenInPlainDecimalForm) {
  EXPECT_EQ(plain_json(json::value(10.2)), "10.2");
  EXPECT_EQ(plain_json(json::value(0.001)), "0.001");
  EXPECT_EQ(plain_json(json::value(-50.8)), "-50.8");
  EXPECT_EQ(plain_json(json::value(1.5e-7)), "0.00000015");
}

TEST(PlainJson, ValuesThatAreNotFiniteAreNull) {
  EXPECT_EQ(plain_json(json::value(std::numeric_limits<double>::infinity())), "null");
  EXPECT_EQ(plain_json(json::value(std::nan(""))), "null");
}

TEST(PlainJson, ObjectsArraysAndStringsKeepTheirOrderAndEscapes) {
  json::object o;
  o["budget_ms"] = 50.0;
  o["elapsed_ms"] = 50.8;
  o["name"] = "a\"b\n";
  o["list"] = json::array{1, -2, 3.25, nullptr, true};
  o["big"] = std::uint64_t{18446744073709551615u};
  const std::string text = plain_json(o);
  EXPECT_EQ(text,
            "{\"budget_ms\":50,\"elapsed_ms\":50.8,\"name\":\"a\\\"b\\n\",\"list\":[1,-2,3.25,null,true],"
            "\"big\":18446744073709551615}");
  EXPECT_EQ(plain_json(json::parse(text)), text);  // and it reads back as the same values
}

TEST(PlainJson, OnlyMagnitudesBeyondJavaScriptsPlainRangeUseAnExponent) {
  EXPECT_EQ(plain_json(json::value(1e20)), "100000000000000000000");
  EXPECT_EQ(plain_json(json::value(1e-7)), "0.0000001");
  EXPECT_EQ(plain_json(json::value(1e21)), "1e+21");
  EXPECT_EQ(plain_json(json::value(1.5e-8)), "1.5e-08");
  for (double d : {std::numeric_limits<double>::max(), std::numeric_limits<double>::denorm_min(),
                   -std::numeric_limits<double>::min(), 123456.789e200, 0.1 + 0.2, 86400.125}) {
    const std::string text = plain_json(json::value(d));
    EXPECT_EQ(json::parse(text).to_number<double>(), d) << text;  // read back exactly
  }
}

}  // namespace
