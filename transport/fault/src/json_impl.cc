// Boost.JSON, header-only: its implementation is compiled here, once for the
// module. No other translation unit linked with wheelrpc::fault may include
// <boost/json/src.hpp> (nor link Boost.JSON's library).
#include <boost/json/src.hpp>
