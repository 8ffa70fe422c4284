#include "dorm/mcp/sse_data.hpp"

namespace dorm::mcp {

void append_sse_data(std::string& out, std::string_view data) {
  std::size_t start = 0;
  for (;;) {
    std::size_t end = data.find_first_of("\r\n", start);
    out += "data: ";
    out.append(data.substr(start, end == std::string_view::npos ? end : end - start));
    out += '\n';
    if (end == std::string_view::npos) return;
    start = end + (data[end] == '\r' && end + 1 < data.size() && data[end + 1] == '\n' ? 2 : 1);
  }
}

}  // namespace dorm::mcp
