// apt's source files as the probe prints them ("@@file PATH" before each
// file's text): one-line .list files (and /etc/apt/sources.list) and
// deb822 .sources files, reduced to what a repository step must compare —
// which file declares which URIs and suites, and whether it is enabled.

#include "gpuexpand/facts/tool_parsers.hpp"

#include <map>
#include <sstream>

namespace gpuexpand {
namespace {

using nlohmann::json;
using tool_text::lines;
using tool_text::trim;

std::vector<std::string> split_words(std::string_view text) {
  std::vector<std::string> out;
  std::istringstream in{std::string(text)};
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

// "deb [arch=amd64 signed-by=/k.gpg] URI SUITE COMPONENT..." (deb-src too).
void one_line_entries(const std::string& file, std::string_view text, json& out) {
  for (std::string_view line : lines(text)) {
    line = trim(line);
    if (line.empty() || line.front() == '#') continue;
    std::string rest(line);
    if (auto hash = rest.find('#'); hash != std::string::npos) rest.resize(hash);
    std::istringstream in(rest);
    std::string type;
    in >> type;
    if (type != "deb" && type != "deb-src") continue;
    std::string remaining;
    std::getline(in, remaining);
    std::string_view r = trim(remaining);
    if (!r.empty() && r.front() == '[') {
      const auto close = r.find(']');
      if (close == std::string_view::npos) continue;
      r = trim(r.substr(close + 1));
    }
    const auto words = split_words(r);
    if (words.size() < 2) continue;
    out.push_back({{"file", file}, {"uris", {words[0]}}, {"suites", {words[1]}}, {"enabled", true}});
  }
}

// Stanzas separated by blank lines; "Field: value" with continuation
// lines starting with a space.
void deb822_entries(const std::string& file, std::string_view text, json& out) {
  std::map<std::string, std::string> fields;
  std::string last;
  auto flush = [&] {
    if (fields.count("uris") && fields.count("suites")) {
      std::string enabled = fields.count("enabled") ? fields["enabled"] : "yes";
      for (auto& c : enabled) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      json uris = json::array(), suites = json::array();
      for (const auto& u : split_words(fields["uris"])) uris.push_back(u);
      for (const auto& s : split_words(fields["suites"])) suites.push_back(s);
      out.push_back({{"file", file}, {"uris", uris}, {"suites", suites}, {"enabled", enabled != "no"}});
    }
    fields.clear();
    last.clear();
  };
  for (std::string_view line : lines(text)) {
    if (trim(line).empty()) {
      flush();
      continue;
    }
    if (line.front() == '#') continue;
    if ((line.front() == ' ' || line.front() == '\t') && !last.empty()) {
      fields[last] += " " + std::string(trim(line));
      continue;
    }
    const auto colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    std::string key(trim(line.substr(0, colon)));
    for (auto& c : key) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    fields[key] = std::string(trim(line.substr(colon + 1)));
    last = key;
  }
  flush();
}

}  // namespace

json apt_sources_facts(std::string_view body) {
  json out = json::array();
  std::string file, text;
  auto done = [&] {
    if (file.empty()) return;
    const bool deb822 = file.size() > 8 && file.compare(file.size() - 8, 8, ".sources") == 0;
    (deb822 ? deb822_entries : one_line_entries)(file, text, out);
  };
  for (std::string_view line : lines(body)) {
    if (line.rfind("@@file ", 0) == 0) {
      done();
      file = std::string(line.substr(7));
      text.clear();
    } else {
      text.append(line.data(), line.size());
      text += '\n';
    }
  }
  done();
  return out;
}

}  // namespace gpuexpand
