/// The payload generator: see payload_gen.h. `proto` is this schema (the
/// field numbers and types are what the bytes say; no .proto file is
/// compiled):
///
///   message Page    { repeated User users = 1; string note = 2; bool last = 3; }
///   message User    { int64 id = 1; bytes uuid = 2; string name = 3; string email = 4;
///                     Status status = 5; Role role = 6; int64 created_at_ms = 7;
///                     int64 updated_at_ms = 8; double score = 9; double balance = 10;
///                     bool verified = 11; repeated string tags = 12; Address address = 13;
///                     Stats stats = 14; }
///   message Address { string street = 1; string city = 2; string country = 3; string zip = 4; }
///   message Stats   { uint32 logins = 1; uint32 orders = 2; fixed32 last_ip = 3; }
///   enum Status     { ACTIVE = 0; INACTIVE = 1; SUSPENDED = 2; PENDING = 3; }
///   enum Role       { VIEWER = 0; EDITOR = 1; ADMIN = 2; OWNER = 3; }
///
/// `json` writes the same fields under the same names (the timestamps as
/// ISO 8601 text, the UUID in its 8-4-4-4-12 hex form, the enums as
/// lower-case names, `score` and `balance` with two decimals), in
/// {"users":[...],"note":"..."}.

#include "payload_gen.h"

#include <array>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <string>

#include "bench_util.h"

namespace wheelrpc::bench {

namespace {

constexpr std::array<std::string_view, 24> kFirst = {
    "Alice", "Bruno", "Chloe",  "Daniel", "Emma",  "Felix", "Grace", "Hugo",  "Ines",   "Jonas",  "Keiko", "Liam",
    "Maria", "Noah",  "Olivia", "Pablo",  "Quinn", "Rosa",  "Sven",  "Tomas", "Ursula", "Victor", "Wei",   "Yasmin"};
constexpr std::array<std::string_view, 24> kLast = {"Anderson", "Bernard",  "Costa",   "Dubois", "Eriksson", "Fischer",
                                                    "Garcia",   "Hansen",   "Ivanova", "Jensen", "Kowalski", "Larsen",
                                                    "Moreau",   "Nakamura", "Olsen",   "Petrov", "Quintero", "Rossi",
                                                    "Schmidt",  "Tanaka",   "Ueda",    "Varga",  "Weber",    "Zhang"};
constexpr std::array<std::string_view, 6> kDomains = {"example.com", "mail.example.org",  "corp.example.net",
                                                      "example.io",  "users.example.com", "example.de"};
constexpr std::array<std::string_view, 4> kStatus = {"active", "inactive", "suspended", "pending"};
constexpr std::array<std::string_view, 4> kRole = {"viewer", "editor", "admin", "owner"};
constexpr std::array<std::string_view, 12> kTags = {"beta",   "mobile", "newsletter", "premium", "trial",   "vip",
                                                    "legacy", "web",    "api",        "partner", "student", "eu"};
constexpr std::array<std::string_view, 12> kStreets = {"Main Street",  "High Street",  "Rue de la Paix", "Baker Street",
                                                       "Elm Avenue",   "Hauptstrasse", "Calle Mayor",    "Oak Lane",
                                                       "Station Road", "Via Roma",     "Park Avenue",    "Church Road"};
struct City {
  std::string_view name, country;
};
constexpr std::array<City, 16> kCities = {{{"Lyon", "FR"},
                                           {"Paris", "FR"},
                                           {"Berlin", "DE"},
                                           {"Munich", "DE"},
                                           {"Madrid", "ES"},
                                           {"Lisbon", "PT"},
                                           {"Rome", "IT"},
                                           {"Milan", "IT"},
                                           {"London", "GB"},
                                           {"Dublin", "IE"},
                                           {"Oslo", "NO"},
                                           {"Stockholm", "SE"},
                                           {"Warsaw", "PL"},
                                           {"Tokyo", "JP"},
                                           {"Boston", "US"},
                                           {"Austin", "US"}}};
/// The free text that pads a page to its size.
constexpr std::array<std::string_view, 24> kWords = {"the",     "account", "was",     "updated", "by",      "support",
                                                     "after",   "a",       "request", "from",    "the",     "owner",
                                                     "billing", "address", "changed", "and",     "invoice", "sent",
                                                     "again",   "see",     "ticket",  "for",     "details", "pending"};

/// 2026-01-01T00:00:00Z in ms since the Unix epoch.
constexpr std::int64_t kEpoch2026Ms = 1'767'225'600'000;

/// One record, drawn once and written in either form.
struct User {
  std::int64_t id = 0;
  std::array<std::uint8_t, 16> uuid{};
  std::string name, email;
  int status = 0, role = 0;
  std::int64_t created_ms = 0, updated_ms = 0;
  std::int64_t score_cents = 0, balance_cents = 0;
  bool verified = false;
  std::array<std::string_view, 3> tags{};
  int tag_count = 0;
  std::string street, zip;
  City city;
  std::uint32_t logins = 0, orders = 0, last_ip = 0;
};

/// Draws the records of one page, in id order, as a database would list them.
class Users {
 public:
  explicit Users(std::uint64_t seed) : rng_(seed) {}

  User next() {
    User u;
    id_ += rng_.uniform(1, 20);
    u.id = id_;
    for (std::size_t i = 0; i < u.uuid.size(); i += 8) {
      const std::uint64_t r = rng_.next();
      std::memcpy(u.uuid.data() + i, &r, 8);
    }
    u.uuid[6] = static_cast<std::uint8_t>((u.uuid[6] & 0x0f) | 0x40);  // version 4
    u.uuid[8] = static_cast<std::uint8_t>((u.uuid[8] & 0x3f) | 0x80);  // RFC 4122 variant
    const std::string_view first = pick(kFirst), last = pick(kLast);
    u.name.append(first).append(" ").append(last);
    u.email.append(lower(first)).append(".").append(lower(last));
    if (rng_.uniform(0, 2) == 0) u.email += std::to_string(rng_.uniform(1, 99));
    u.email.append("@").append(pick(kDomains));
    const auto s = rng_.uniform(0, 9);  // mostly active
    u.status = s < 7 ? 0 : static_cast<int>(s - 6);
    u.role = static_cast<int>(rng_.uniform(0, 3));
    created_ms_ += rng_.uniform(1'000, 6 * 3'600'000);
    u.created_ms = created_ms_;
    u.updated_ms = created_ms_ + rng_.uniform(0, 30LL * 86'400'000);
    u.score_cents = rng_.uniform(0, 10'000);
    u.balance_cents = rng_.uniform(0, 9) < 8 ? rng_.uniform(0, 50'000) : rng_.uniform(0, 10'000'000);
    u.verified = rng_.uniform(0, 3) != 0;
    u.tag_count = static_cast<int>(rng_.uniform(0, 3));
    for (int i = 0; i < u.tag_count; ++i) u.tags[static_cast<std::size_t>(i)] = pick(kTags);
    u.street = std::to_string(rng_.uniform(1, 199)) + " " + std::string(pick(kStreets));
    u.city = pick(kCities);
    u.zip = std::to_string(rng_.uniform(10'000, 99'999));
    u.logins = static_cast<std::uint32_t>(rng_.uniform(0, 2'000));
    u.orders = static_cast<std::uint32_t>(rng_.uniform(0, 60));
    u.last_ip = static_cast<std::uint32_t>(0x0a000000u | (rng_.next() & 0x00ffffffu));  // 10.x.y.z
    return u;
  }

  /// Words of kWords separated by spaces, exactly `n` characters.
  void words(std::string& out, std::size_t n) {
    const std::size_t end = out.size() + n;
    while (out.size() < end) {
      if (out.size() + 1 < end && !out.empty() && out.back() != '"') out += ' ';
      const std::string_view w = pick(kWords);
      out.append(w.substr(0, std::min(w.size(), end - out.size())));
    }
  }

 private:
  template <class A>
  const typename A::value_type& pick(const A& a) {
    return a[static_cast<std::size_t>(rng_.uniform(0, static_cast<std::int64_t>(a.size()) - 1))];
  }
  static std::string lower(std::string_view s) {
    std::string r(s);
    for (char& c : r) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return r;
  }

  SplitMix64 rng_;
  std::int64_t id_ = 1'000'000;
  std::int64_t created_ms_ = kEpoch2026Ms;
};

// ---- JSON ------------------------------------------------------------------------

void put_cents(std::string& out, std::int64_t cents) {
  char buf[32];
  const int n = std::snprintf(buf, sizeof buf, "%lld.%02lld", static_cast<long long>(cents / 100),
                              static_cast<long long>(cents % 100));
  out.append(buf, static_cast<std::size_t>(n));
}

/// ISO 8601 UTC with milliseconds (civil_from_days: H. Hinnant's algorithm).
void put_time(std::string& out, std::int64_t ms) {
  const std::int64_t secs = ms / 1000, days = secs / 86'400, sod = secs % 86'400;
  const std::int64_t z = days + 719'468, era = z / 146'097, doe = z - era * 146'097;
  const std::int64_t yoe = (doe - doe / 1460 + doe / 36'524 - doe / 146'096) / 365;
  const std::int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100), mp = (5 * doy + 2) / 153;
  const std::int64_t d = doy - (153 * mp + 2) / 5 + 1, m = mp < 10 ? mp + 3 : mp - 9;
  const std::int64_t y = yoe + era * 400 + (m <= 2 ? 1 : 0);
  char buf[40];
  const int n = std::snprintf(buf, sizeof buf, "%04lld-%02lld-%02lldT%02lld:%02lld:%02lld.%03lldZ",
                              static_cast<long long>(y), static_cast<long long>(m), static_cast<long long>(d),
                              static_cast<long long>(sod / 3600), static_cast<long long>(sod / 60 % 60),
                              static_cast<long long>(sod % 60), static_cast<long long>(ms % 1000));
  out.append(buf, static_cast<std::size_t>(n));
}

void put_uuid(std::string& out, const std::array<std::uint8_t, 16>& u) {
  static constexpr char kHex[] = "0123456789abcdef";
  for (std::size_t i = 0; i < u.size(); ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out += '-';
    out += kHex[u[i] >> 4];
    out += kHex[u[i] & 15];
  }
}

std::string json_user(const User& u) {
  std::string o;
  o.reserve(512);
  o.append(R"({"id":)").append(std::to_string(u.id));
  o.append(R"(,"uuid":")");
  put_uuid(o, u.uuid);
  o.append(R"(","name":")").append(u.name);
  o.append(R"(","email":")").append(u.email);
  o.append(R"(","status":")").append(kStatus[static_cast<std::size_t>(u.status)]);
  o.append(R"(","role":")").append(kRole[static_cast<std::size_t>(u.role)]);
  o.append(R"(","created_at":")");
  put_time(o, u.created_ms);
  o.append(R"(","updated_at":")");
  put_time(o, u.updated_ms);
  o.append(R"(","score":)");
  put_cents(o, u.score_cents);
  o.append(R"(,"balance":)");
  put_cents(o, u.balance_cents);
  o.append(R"(,"verified":)").append(u.verified ? "true" : "false");
  o.append(R"(,"tags":[)");
  for (int i = 0; i < u.tag_count; ++i) {
    if (i) o += ',';
    o.append("\"").append(u.tags[static_cast<std::size_t>(i)]).append("\"");
  }
  o.append(R"(],"address":{"street":")").append(u.street);
  o.append(R"(","city":")").append(u.city.name);
  o.append(R"(","country":")").append(u.city.country);
  o.append(R"(","zip":")").append(u.zip);
  o.append(R"("},"stats":{"logins":)").append(std::to_string(u.logins));
  o.append(R"(,"orders":)").append(std::to_string(u.orders));
  o.append(R"(,"last_ip":")")
      .append(std::to_string(u.last_ip >> 24))
      .append(".")
      .append(std::to_string(u.last_ip >> 16 & 255))
      .append(".")
      .append(std::to_string(u.last_ip >> 8 & 255))
      .append(".")
      .append(std::to_string(u.last_ip & 255));
  o.append(R"("}})");
  return o;
}

std::string json_page(std::size_t size, std::uint64_t seed) {
  constexpr std::string_view kHead = R"({"users":[)", kNote = R"(],"note":")", kEnd = R"("})";
  std::string out(kHead);
  Users users(seed);
  for (bool first = true;; first = false) {
    const std::string rec = json_user(users.next());
    if (out.size() + (first ? 0 : 1) + rec.size() + kNote.size() + kEnd.size() > size) break;
    if (!first) out += ',';
    out += rec;
  }
  out += kNote;
  if (out.size() + kEnd.size() < size) users.words(out, size - out.size() - kEnd.size());
  out += kEnd;
  out.resize(size);  // below the skeleton's 22 bytes: its start
  return out;
}

// ---- protobuf wire format -----------------------------------------------------------

enum WireType : std::uint32_t { kVarint = 0, kFixed64 = 1, kLen = 2, kFixed32 = 5 };

std::size_t varint_size(std::uint64_t v) {
  std::size_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    ++n;
  }
  return n;
}
void put_varint(std::string& out, std::uint64_t v) {
  while (v >= 0x80) {
    out += static_cast<char>((v & 0x7f) | 0x80);
    v >>= 7;
  }
  out += static_cast<char>(v);
}
void put_tag(std::string& out, std::uint32_t field, WireType type) { put_varint(out, field << 3 | type); }
void put_int(std::string& out, std::uint32_t field, std::uint64_t v) {
  put_tag(out, field, kVarint);
  put_varint(out, v);
}
void put_bytes(std::string& out, std::uint32_t field, std::string_view v) {
  put_tag(out, field, kLen);
  put_varint(out, v.size());
  out.append(v);
}
void put_double(std::string& out, std::uint32_t field, double v) {
  put_tag(out, field, kFixed64);
  char b[8];
  std::memcpy(b, &v, 8);  // little-endian hosts only, as is all of Linux/x86-64 and arm64
  out.append(b, 8);
}
void put_fixed32(std::string& out, std::uint32_t field, std::uint32_t v) {
  put_tag(out, field, kFixed32);
  char b[4];
  std::memcpy(b, &v, 4);
  out.append(b, 4);
}

std::string proto_user(const User& u) {
  std::string o;
  o.reserve(256);
  put_int(o, 1, static_cast<std::uint64_t>(u.id));
  put_bytes(o, 2, {reinterpret_cast<const char*>(u.uuid.data()), u.uuid.size()});
  put_bytes(o, 3, u.name);
  put_bytes(o, 4, u.email);
  if (u.status) put_int(o, 5, static_cast<std::uint64_t>(u.status));  // proto3: defaults are not written
  if (u.role) put_int(o, 6, static_cast<std::uint64_t>(u.role));
  put_int(o, 7, static_cast<std::uint64_t>(u.created_ms));
  put_int(o, 8, static_cast<std::uint64_t>(u.updated_ms));
  if (u.score_cents) put_double(o, 9, static_cast<double>(u.score_cents) / 100);
  if (u.balance_cents) put_double(o, 10, static_cast<double>(u.balance_cents) / 100);
  if (u.verified) put_int(o, 11, 1);
  for (int i = 0; i < u.tag_count; ++i) put_bytes(o, 12, u.tags[static_cast<std::size_t>(i)]);
  std::string address;
  put_bytes(address, 1, u.street);
  put_bytes(address, 2, u.city.name);
  put_bytes(address, 3, u.city.country);
  put_bytes(address, 4, u.zip);
  put_bytes(o, 13, address);
  std::string stats;
  if (u.logins) put_int(stats, 1, u.logins);
  if (u.orders) put_int(stats, 2, u.orders);
  put_fixed32(stats, 3, u.last_ip);
  put_bytes(o, 14, stats);
  return o;
}

std::string proto_page(std::size_t size, std::uint64_t seed) {
  // Room kept after the records for the padding: 4 bytes fit either form below.
  constexpr std::size_t kReserve = 4;
  std::string out;
  Users users(seed);
  for (;;) {
    const std::string rec = proto_user(users.next());
    if (out.size() + 1 + varint_size(rec.size()) + rec.size() + kReserve > size) break;
    put_bytes(out, 1, rec);
  }
  std::size_t left = size - std::min(size, out.size());
  if (left < 2) {  // below 4 bytes in all: the start of a `last` field
    out.append(left, '\x18');
    return out;
  }
  // note = 2: tag, length, text; when no length fits (its varint's size
  // changes at the boundary), 2 bytes less of it and `last = true` after.
  bool with_last = true;
  for (std::size_t k = 1; k <= 3 && with_last; ++k) {
    if (left >= 1 + k && varint_size(left - 1 - k) == k) with_last = false;
  }
  if (with_last) left -= 2;
  std::size_t len = 0;
  for (std::size_t k = 1; k <= 3; ++k) {
    if (left >= 1 + k && varint_size(left - 1 - k) == k) len = left - 1 - k;
  }
  put_tag(out, 2, kLen);
  put_varint(out, len);
  users.words(out, len);
  if (with_last) put_int(out, 3, 1);
  return out;
}

}  // namespace

std::string_view to_string(Content c) noexcept {
  switch (c) {
    case Content::fill: return "fill";
    case Content::json: return "json";
    case Content::proto: return "proto";
    case Content::random: return "random";
    case Content::zeros: return "zeros";
  }
  return "?";
}

std::optional<Content> parse_content(std::string_view name) noexcept {
  for (const Content c : {Content::fill, Content::json, Content::proto, Content::random, Content::zeros}) {
    if (name == to_string(c)) return c;
  }
  return std::nullopt;
}

std::string make_payload(Content content, std::size_t size, std::uint64_t seed) {
  switch (content) {
    case Content::fill: return std::string(size, 'x');
    case Content::zeros: return std::string(size, '\0');
    case Content::json: return json_page(size, seed);
    case Content::proto: return proto_page(size, seed);
    case Content::random: {
      std::string out(size, '\0');
      SplitMix64 rng(seed);
      for (std::size_t i = 0; i < size; i += 8) {
        const std::uint64_t r = rng.next();
        std::memcpy(out.data() + i, &r, std::min<std::size_t>(8, size - i));
      }
      return out;
    }
  }
  return {};
}

}  // namespace wheelrpc::bench
