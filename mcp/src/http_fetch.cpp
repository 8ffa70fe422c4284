// The one translation unit of the fetch client that includes Beast and Asio's SSL (see
// http_fetch.hpp). Every step is asynchronous on a private io_context that this thread
// runs for at most the timeout: Asio's synchronous operations have no timeout at all.
#include "dorm/mcp/http_fetch.hpp"

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <boost/url/parse.hpp>

#include <functional>
#include <memory>
#include <optional>

#include "dorm/mcp/listen_address.hpp"

namespace dorm::mcp {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
namespace ssl = net::ssl;
using tcp = net::ip::tcp;

struct Target {
  bool tls = false;
  std::string host;  // without brackets
  std::string port;
  std::string path;  // path and query, "/" at least
};

Result<Target> parse_target(const std::string& url, const FetchOptions& options) {
  auto parsed = boost::urls::parse_absolute_uri(url);
  if (!parsed) return Error{ErrorCode::invalid_argument, "'" + url + "' is not an absolute URL"};
  Target t;
  std::string scheme = parsed->scheme();
  if (scheme == "https") {
    t.tls = true;
  } else if (scheme != "http") {
    return Error{ErrorCode::invalid_argument, "'" + url + "': only https:// (or http:// to loopback) is fetched"};
  }
  t.host = parsed->host_address();
  if (t.host.empty()) return Error{ErrorCode::invalid_argument, "'" + url + "' has no host"};
  t.port = parsed->has_port() ? std::string(parsed->port()) : (t.tls ? "443" : "80");
  t.path = std::string(parsed->encoded_path());
  if (t.path.empty()) t.path = "/";
  if (parsed->has_query()) t.path += "?" + std::string(parsed->encoded_query());
  if (!t.tls && !options.allow_http && !is_loopback_host(t.host)) {
    return Error{ErrorCode::invalid_argument,
                 "'" + url + "': plain http:// is fetched from a loopback host only (or with --oauth-allow-http)"};
  }
  return t;
}

// One exchange; `Stream` is a beast::tcp_stream or an ssl_stream over one.
// What to send: GET, or POST of a form (RFC 7662 introspection).
struct Outgoing {
  http::verb method = http::verb::get;
  std::string form;           // the POST body, application/x-www-form-urlencoded
  std::string authorization;  // the Authorization header's value, if any
};

template <typename Stream>
struct Exchange : std::enable_shared_from_this<Exchange<Stream>> {
  Exchange(Stream stream, Target target, std::string url, std::size_t max_body, const Outgoing& out)
      : stream(std::move(stream)), target(std::move(target)), url(std::move(url)) {
    parser.body_limit(max_body);
    request.version(11);
    request.method(out.method);
    request.target(this->target.path);
    if (out.method == http::verb::post) {
      request.set(http::field::content_type, "application/x-www-form-urlencoded");
      request.body() = out.form;
      request.prepare_payload();
    }
    if (!out.authorization.empty()) request.set(http::field::authorization, out.authorization);
    bool default_port = this->target.port == (this->target.tls ? "443" : "80");
    std::string host = this->target.host.find(':') != std::string::npos ? "[" + this->target.host + "]"
                                                                         : this->target.host;
    request.set(http::field::host, default_port ? host : host + ":" + this->target.port);
    request.set(http::field::user_agent, "dorm");
    request.set(http::field::accept, "application/json");
  }

  void fail(const std::string& what, const beast::error_code& ec) {
    if (!outcome) outcome = Error{ErrorCode::io_error, verb() + " " + url + ": " + what + ": " + ec.message()};
  }

  void send() {
    http::async_write(stream, request, [self = this->shared_from_this()](beast::error_code ec, std::size_t) {
      if (ec) return self->fail("sending the request", ec);
      http::async_read(self->stream, self->buffer, self->parser,
                       [self](beast::error_code ec, std::size_t) {
                         if (ec) return self->fail("reading the response", ec);
                         auto& res = self->parser.get();
                         if (res.result_int() != 200) {
                           self->outcome = Error{ErrorCode::io_error, self->verb() + " " + self->url +
                                                                          ": status " +
                                                                          std::to_string(res.result_int())};
                           return;
                         }
                         self->outcome = std::move(res.body());
                       });
    });
  }

  std::string verb() const { return std::string(http::to_string(request.method())); }

  Stream stream;
  Target target;
  std::string url;
  http::request<http::string_body> request;
  http::response_parser<http::string_body> parser;
  beast::flat_buffer buffer;
  std::optional<Result<std::string>> outcome;
};

Result<std::string> exchange(const std::string& url, const Outgoing& out, const FetchOptions& options) {
  const std::string verb(http::to_string(out.method));
  auto target = parse_target(url, options);
  if (!target) return target.error();
  // The context outlives the io_context, whose destruction frees the streams of an
  // exchange cut off by the timeout.
  ssl::context tls{ssl::context::tls_client};
  if (options.ca_file.empty()) {
    tls.set_default_verify_paths();
  } else {
    beast::error_code ec;
    tls.load_verify_file(options.ca_file, ec);
    if (ec) {
      return Error{ErrorCode::io_error, verb + " " + url + ": cannot read the CA file " + options.ca_file + ": " +
                                            ec.message()};
    }
  }
  tls.set_verify_mode(ssl::verify_peer);
  net::io_context ioc;
  tcp::resolver resolver{ioc};
  std::optional<Result<std::string>> early;  // a failure before the exchange exists
  std::function<std::optional<Result<std::string>>()> result;

  resolver.async_resolve(target->host, target->port, [&](beast::error_code ec, tcp::resolver::results_type found) {
    if (ec) {
      early = Error{ErrorCode::io_error, verb + " " + url + ": cannot resolve " + target->host + ": " + ec.message()};
      return;
    }
    if (!target->tls) {
      auto ex = std::make_shared<Exchange<beast::tcp_stream>>(beast::tcp_stream(ioc), *target, url,
                                                               options.max_body_bytes, out);
      result = [ex] { return ex->outcome; };
      ex->stream.async_connect(found, [ex](beast::error_code ec, const tcp::endpoint&) {
        if (ec) return ex->fail("connecting", ec);
        ex->send();
      });
      return;
    }
    using TlsStream = beast::ssl_stream<beast::tcp_stream>;
    auto ex = std::make_shared<Exchange<TlsStream>>(TlsStream(ioc, tls), *target, url, options.max_body_bytes, out);
    result = [ex] { return ex->outcome; };
    // SNI (a name only: RFC 6066 §3 keeps IP literals out of it), and the certificate
    // must name the host, by DNS name or by IP address.
    beast::error_code not_ip;
    net::ip::make_address(target->host, not_ip);
    if (not_ip && !SSL_set_tlsext_host_name(ex->stream.native_handle(), target->host.c_str())) {
      early = Error{ErrorCode::io_error, verb + " " + url + ": cannot set the TLS server name"};
      return;
    }
    ex->stream.set_verify_callback(ssl::host_name_verification(target->host));
    beast::get_lowest_layer(ex->stream).async_connect(found, [ex](beast::error_code ec, const tcp::endpoint&) {
      if (ec) return ex->fail("connecting", ec);
      ex->stream.async_handshake(ssl::stream_base::client, [ex](beast::error_code ec) {
        if (ec) return ex->fail("TLS handshake", ec);
        ex->send();
      });
    });
  });
  ioc.run_for(options.timeout);
  if (early) return std::move(*early);
  if (result) {
    if (auto outcome = result()) return std::move(*outcome);
  }
  return Error{ErrorCode::io_error, verb + " " + url + ": no answer within " +
                                        std::to_string(options.timeout.count()) + " ms"};
}

}  // namespace

Result<std::string> http_get(const std::string& url, const FetchOptions& options) {
  return exchange(url, Outgoing{}, options);
}

Result<std::string> http_post_form(const std::string& url, std::string form, std::string authorization,
                                   const FetchOptions& options) {
  return exchange(url, Outgoing{http::verb::post, std::move(form), std::move(authorization)}, options);
}

}  // namespace dorm::mcp
