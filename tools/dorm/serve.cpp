#include "serve.hpp"

namespace dorm::tools {

int serve(const ServeOptions& options) {
  server::Server server(options);
  return server.run();
}

}  // namespace dorm::tools
