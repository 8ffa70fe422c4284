// Boost.URL is used header-only: this is the one translation unit with its definitions, for
// every binary that links this layer or one above it (dns_rebinding.cpp, listen_address.cpp,
// actors/src/approval_page.cpp use it).
#include <boost/url/src.hpp>
