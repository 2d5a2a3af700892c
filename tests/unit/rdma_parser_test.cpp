// RDMA parsers (ibstat, ibdev2netdev, rdma link) on real captures
// (tests/fixtures/tool-output/, see SOURCES.md there) and hand-made edge
// cases. Every port list must be a valid network.rdma in
// schemas/facts.schema.json.

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <valijson/adapters/nlohmann_json_adapter.hpp>
#include <valijson/schema.hpp>
#include <valijson/schema_parser.hpp>
#include <valijson/validation_results.hpp>
#include <valijson/validator.hpp>

#include "gpuexpand/facts/tool_parsers.hpp"

namespace gpuexpand {
namespace {

using nlohmann::json;

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  if (!in) ADD_FAILURE() << "cannot read " << path;
  return out.str();
}

std::string fixture(const std::string& name) {
  return read_file(std::string(GPUEXPAND_SOURCE_DIR) + "/tests/fixtures/tool-output/" + name);
}

// Schema errors of a minimal facts document with network.rdma = `ports`.
std::string rdma_schema_errors(const json& ports) {
  static valijson::Schema schema;
  static const bool loaded = [] {
    const json document = json::parse(read_file(std::string(GPUEXPAND_SOURCE_DIR) + "/schemas/facts.schema.json"));
    valijson::SchemaParser parser(valijson::SchemaParser::kDraft7);
    valijson::adapters::NlohmannJsonAdapter adapter(document);
    parser.populateSchema(adapter, schema);
    return true;
  }();
  (void)loaded;
  const json facts = {{"schema_version", 1}, {"node", "n"}, {"gpus", {{"count", 0}}}, {"network", {{"rdma", ports}}}};
  valijson::Validator validator(valijson::Validator::kStrongTypes);
  valijson::ValidationResults results;
  valijson::adapters::NlohmannJsonAdapter adapter(facts);
  if (validator.validate(schema, adapter, &results)) return "";
  std::string errors;
  valijson::ValidationResults::Error error;
  while (results.popError(error)) {
    for (const auto& part : error.context) errors += part;
    errors += ": " + error.description + "\n";
  }
  return errors;
}

template <class Parse>
json parsed(Parse parse, const std::string& text) {
  auto result = parse(text);
  EXPECT_TRUE(result.ok()) << (result.ok() ? "" : result.error().message);
  return result.ok() ? result.value() : json();
}

template <class Parse>
std::string error_of(Parse parse, const std::string& text) {
  auto result = parse(text);
  return result.ok() ? "parsed: " + result.value().dump() : result.error().message;
}

const json* port_of(const json& ports, const std::string& device) {
  for (const auto& port : ports) {
    if (port["device"] == device) return &port;
  }
  ADD_FAILURE() << "no port of " << device;
  return nullptr;
}

std::string crlf(const std::string& text) {
  std::string out;
  for (const char c : text) {
    if (c == '\n') out += '\r';
    out += c;
  }
  return out;
}

// ------------------------------------------------------------------ ibstat

TEST(Ibstat, RealNdr400InfiniBandWithThreeEthernetPortsDown) {
  const auto ports = parsed(parse_ibstat, fixture("ibstat-cx7-ib-ndr400-h100x8-3eth-down.txt"));
  ASSERT_EQ(ports.size(), 12u);
  EXPECT_EQ(ports[0], json::parse(R"({"device": "mlx5_0", "port": 1, "netdev": null, "state": "active",
      "physical_state": "link_up", "rate": "400", "rate_gbps": 400.0, "base_lid": 75, "sm_lid": 334,
      "port_guid": "0x946dae0300cde72c", "link_layer": "infiniband", "ca_type": "MT4129",
      "firmware_version": "28.39.1002"})"));
  EXPECT_EQ(ports[2]["device"], "mlx5_10") << "ibstat's order, as printed";
  const json* down = port_of(ports, "mlx5_2");
  ASSERT_NE(down, nullptr);
  EXPECT_EQ((*down)["state"], "down");
  EXPECT_EQ((*down)["physical_state"], "disabled");
  EXPECT_EQ((*down)["rate"], "40");
  EXPECT_EQ((*down)["link_layer"], "ethernet");
  EXPECT_EQ((*down)["ca_type"], "MT4125");
  int ib = 0, down_count = 0;
  for (const auto& port : ports) {
    ib += port["link_layer"] == "infiniband";
    down_count += port["state"] == "down";
  }
  EXPECT_EQ(ib, 8);
  EXPECT_EQ(down_count, 3);
  EXPECT_EQ(port_of(ports, "mlx5_9")->at("link_layer"), "infiniband") << "last line, no final newline";
  EXPECT_EQ(rdma_schema_errors(ports), "");
}

TEST(Ibstat, RealRoce400AllEthernet) {
  const auto ports = parsed(parse_ibstat, fixture("ibstat-cx7-roce400-h100x8.txt"));
  ASSERT_EQ(ports.size(), 12u);
  for (const auto& port : ports) {
    EXPECT_EQ(port["link_layer"], "ethernet");
    EXPECT_EQ(port["state"], "active");
  }
  const json* cx6 = port_of(ports, "mlx5_1");
  ASSERT_NE(cx6, nullptr);
  EXPECT_EQ((*cx6)["port_guid"], "0x0000000000000000") << "the CX-6 Dx ports really print a zero GUID";
  EXPECT_EQ((*cx6)["rate_gbps"], 100.0);
  EXPECT_EQ(port_of(ports, "mlx5_0")->at("base_lid"), 0);
  EXPECT_EQ(rdma_schema_errors(ports), "");
}

TEST(Ibstat, RealVirtualFunctionsMixedFirmware) {
  const auto ports = parsed(parse_ibstat, fixture("ibstat-mt4126-vf-cx6dx-cx7-a100.txt"));
  ASSERT_EQ(ports.size(), 9u);
  EXPECT_EQ(ports[0]["link_layer"], "ethernet");
  EXPECT_EQ(ports[0]["firmware_version"], "22.35.2302");
  EXPECT_EQ(ports[1]["link_layer"], "infiniband");
  EXPECT_EQ(ports[1]["firmware_version"], "28.37.1014");
  EXPECT_EQ(ports[8]["rate"], "200");
  EXPECT_EQ(ports[8]["base_lid"], 1396);
  EXPECT_EQ(rdma_schema_errors(ports), "");
}

TEST(Ibstat, RealIbpanicExit255IsAnError) {
  EXPECT_EQ(error_of(parse_ibstat, fixture("ibstat-cx6vf-hdr-a100-ibpanic-exit255.txt")),
            "ibstat: ibpanic after 8 CAs: stat of IB device 'mlx5_8' failed: No such file or directory");
  // The same capture without the panic line: blank-indented (the uploader
  // replaced tabs), HDR 200.
  auto text = fixture("ibstat-cx6vf-hdr-a100-ibpanic-exit255.txt");
  text = text.substr(0, text.find("ibpanic:"));
  const auto ports = parsed(parse_ibstat, text);
  ASSERT_EQ(ports.size(), 8u);
  EXPECT_EQ(ports[0]["rate"], "200");
  EXPECT_EQ(ports[0]["base_lid"], 13247);
  EXPECT_EQ(ports[0]["sm_lid"], 1);
  EXPECT_EQ(ports[7]["port_guid"], "0x00155dfffd3411f2");
  EXPECT_EQ(rdma_schema_errors(ports), "");
}

TEST(Ibstat, CrlfGivesTheSamePorts) {
  const auto text = fixture("ibstat-cx7-ib-ndr400-h100x8-3eth-down.txt");
  EXPECT_EQ(parsed(parse_ibstat, crlf(text) + "\r\n"), parsed(parse_ibstat, text));
}

TEST(Ibstat, Errors) {
  EXPECT_EQ(error_of(parse_ibstat, ""), "ibstat: no CA found");
  EXPECT_EQ(error_of(parse_ibstat, "hello world\n"), "ibstat: no CA found");
  EXPECT_EQ(error_of(parse_ibstat, "bash: ibstat: command not found\n"), "ibstat: no CA found");
  EXPECT_EQ(error_of(parse_ibstat, "ibpanic: [7] main: 'mlx5_0' IB device can't be found\n"),
            "ibstat: ibpanic after 0 CAs: 'mlx5_0' IB device can't be found");
  EXPECT_EQ(error_of(parse_ibstat, std::string("CA '\xff'\n")), "ibstat: output is not valid UTF-8");

  const auto text = fixture("ibstat-cx7-ib-ndr400-h100x8-3eth-down.txt");
  // Cut inside the last port, then right after the last CA's header.
  EXPECT_EQ(error_of(parse_ibstat, text.substr(0, text.rfind("\t\tLink layer"))),
            "ibstat: CA 'mlx5_9' port 1 has no Link layer");
  EXPECT_EQ(error_of(parse_ibstat, text.substr(0, text.rfind("\tFirmware version"))),
            "ibstat: CA 'mlx5_9' lists 0 of its 1 ports");
  EXPECT_EQ(error_of(parse_ibstat, "junk\n" + text), "ibstat: line 1: unexpected text 'junk'");
  EXPECT_EQ(error_of(parse_ibstat, "CA 'mlx5_0'\n\tPort 1:\n\t\tBase lid: x\n"),
            "ibstat: line 3: Base lid 'x' is not a number");
  EXPECT_EQ(error_of(parse_ibstat, "CA 'mlx5_0'\n\tPort 1:\n\t\tRate: fast\n"), "ibstat: line 3: Rate 'fast' is not a number");
  EXPECT_EQ(error_of(parse_ibstat, "CA 'mlx5_0'\n\tPort one:\n"), "ibstat: line 2: bad port number in 'Port one:'");
  EXPECT_EQ(error_of(parse_ibstat, "CA 'mlx5_0'\n\tgarbage here\n"), "ibstat: line 2: unexpected text 'garbage here'");
  EXPECT_EQ(error_of(parse_ibstat, "CA 'mlx5_0'\n\tNumber of ports: many\n"),
            "ibstat: line 2: Number of ports 'many' is not a number");
}

// ------------------------------------------------------------ ibdev2netdev

TEST(Ibdev2netdev, RealTwelvePortsWithBondAndTwoDown) {
  const auto map = parsed(parse_ibdev2netdev, fixture("ibdev2netdev-cx7-h100x8.txt"));
  ASSERT_EQ(map.size(), 12u);
  EXPECT_EQ(map[0], json::parse(R"({"device": "mlx5_0", "port": 1, "netdev": "ens108np0", "netdev_state": "up"})"));
  EXPECT_EQ(map[1]["netdev"], "bond0") << "a bonded port names the bond";
  EXPECT_EQ(map[9]["netdev"], "bond0");
  EXPECT_EQ(map[4]["device"], "mlx5_2");
  EXPECT_EQ(map[4]["netdev_state"], "down");
}

TEST(Ibdev2netdev, EmptyIsNoDevicesAndGarbageIsAnError) {
  EXPECT_EQ(parsed(parse_ibdev2netdev, ""), json::array());
  EXPECT_EQ(parsed(parse_ibdev2netdev, "\r\n"), json::array());
  EXPECT_EQ(parsed(parse_ibdev2netdev, "mlx5_0 port 1 ==> ib0 (Up)\r\n")[0]["netdev"], "ib0");
  EXPECT_EQ(error_of(parse_ibdev2netdev, "hello\n"),
            "ibdev2netdev: line 1: expected '<device> port <n> ==> <netdev> (<state>)', got 'hello'");
  EXPECT_EQ(error_of(parse_ibdev2netdev, "mlx5_0 port x ==> ib0 (Up)\n"),
            "ibdev2netdev: line 1: expected '<device> port <n> ==> <netdev> (<state>)', got 'mlx5_0 port x ==> ib0 "
            "(Up)'");
  EXPECT_EQ(error_of(parse_ibdev2netdev, "mlx5_0 port 1 ==> ib0\n"),
            "ibdev2netdev: line 1: expected '<device> port <n> ==> <netdev> (<state>)', got 'mlx5_0 port 1 ==> ib0'");
}

// --------------------------------------------------------------- rdma link

TEST(RdmaLink, RealCx6DxWithTrailingBlanks) {
  const auto ports = parsed(parse_rdma_link, fixture("rdma-link-show-cx6dx.txt"));
  EXPECT_EQ(ports, json::parse(R"([
      {"device": "mlx5_0", "port": 1, "state": "active", "physical_state": "link_up", "netdev": "p1p1"},
      {"device": "mlx5_1", "port": 1, "state": "active", "physical_state": "link_up", "netdev": "p1p2"}])"));
  EXPECT_EQ(rdma_schema_errors(ports), "") << "rdma link alone gives valid ports";
}

TEST(RdmaLink, RealSixteenRocePortsOnOci) {
  const auto ports = parsed(parse_rdma_link, fixture("rdma-link-show-grep-rdma-a100x8-oci-bm-gpu4.8.txt"));
  ASSERT_EQ(ports.size(), 16u);
  EXPECT_EQ(ports[0]["device"], "mlx5_6");
  EXPECT_EQ(ports[0]["netdev"], "rdma0");
  EXPECT_EQ(ports[8]["device"], "mlx5_14");
  EXPECT_EQ(ports[8]["netdev"], "rdma8");
  EXPECT_EQ(rdma_schema_errors(ports), "");
}

TEST(RdmaLink, InfiniBandLineWithoutNetdevAndErrors) {
  const auto ports = parsed(parse_rdma_link,
                            "link mlx5_0/1 subnet_prefix fe80:0000:0000:0000 lid 75 sm_lid 334 lmc 0 state ACTIVE "
                            "physical_state LINK_UP \r\n"
                            "link mlx5_1/1 state DOWN physical_state DISABLED netdev ens2f1np1\n");
  EXPECT_EQ(ports[0], json::parse(R"({"device": "mlx5_0", "port": 1, "state": "active",
      "physical_state": "link_up", "netdev": null})"));
  EXPECT_EQ(ports[1]["state"], "down");
  EXPECT_EQ(ports[1]["physical_state"], "disabled");
  EXPECT_EQ(rdma_schema_errors(ports), "");
  EXPECT_EQ(parsed(parse_rdma_link, ""), json::array());
  EXPECT_EQ(error_of(parse_rdma_link, "hello\n"), "rdma link: line 1: expected 'link <device>/<port> ...', got 'hello'");
  EXPECT_EQ(error_of(parse_rdma_link, "link mlx5_0 state ACTIVE\n"),
            "rdma link: line 1: expected 'link <device>/<port> ...', got 'link mlx5_0 state ACTIVE'");
  EXPECT_EQ(error_of(parse_rdma_link, "\n\nlink mlx5_0/x state\n"),
            "rdma link: line 3: expected 'link <device>/<port> ...', got 'link mlx5_0/x state'");
}

// ------------------------------------------------------------------- merge

TEST(RdmaMerge, NetdevsJoinByDeviceAndPort) {
  // Two captures of 12-device hosts (not the same host): the join itself.
  const auto ports = parsed(parse_ibstat, fixture("ibstat-cx7-roce400-h100x8.txt"));
  const auto map = parsed(parse_ibdev2netdev, fixture("ibdev2netdev-cx7-h100x8.txt"));
  const auto merged = merge_rdma_netdevs(ports, map);
  ASSERT_EQ(merged.size(), 12u);
  EXPECT_EQ(port_of(merged, "mlx5_0")->at("netdev"), "ens108np0");
  EXPECT_EQ(port_of(merged, "mlx5_7")->at("netdev"), "bond0");
  EXPECT_EQ(port_of(merged, "mlx5_11")->at("netdev"), "ens115np0");
  EXPECT_EQ(port_of(merged, "mlx5_11")->at("state"), "active") << "the rest is untouched";
  EXPECT_EQ(rdma_schema_errors(merged), "");

  // rdma link from a host without mlx5_4/5: those keep netdev null.
  const auto links = parsed(parse_rdma_link, fixture("rdma-link-show-grep-rdma-a100x8-oci-bm-gpu4.8.txt"));
  const auto partly = merge_rdma_netdevs(ports, links);
  EXPECT_EQ(port_of(partly, "mlx5_0")->at("netdev"), "rdma4");
  EXPECT_EQ(port_of(partly, "mlx5_4")->at("netdev"), nullptr);
  EXPECT_EQ(rdma_schema_errors(partly), "");
}

TEST(RdmaMerge, WrongShapesNeverThrow) {
  const json ports = json::parse(R"([{"device": "mlx5_0", "port": 1, "netdev": null}, 7, {"device": "mlx5_1"}])");
  EXPECT_EQ(merge_rdma_netdevs(ports, json::object()), ports);
  EXPECT_EQ(merge_rdma_netdevs(json("x"), json::array()), json("x"));
  const json odd = json::parse(R"([1, null, {"device": "mlx5_0"}, {"device": "mlx5_0", "port": 1, "netdev": null},
      {"device": "mlx5_0", "port": "1", "netdev": "wrong"}, {"device": "mlx5_0", "port": 1, "netdev": 5}])");
  EXPECT_EQ(merge_rdma_netdevs(ports, odd), ports);
  EXPECT_EQ(merge_rdma_netdevs(ports, json::parse(R"([{"device": "mlx5_0", "port": 1, "netdev": "ib0"}])"))[0]["netdev"],
            "ib0");
}

}  // namespace
}  // namespace gpuexpand
