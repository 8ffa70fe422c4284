// Reading a runtime's store without a runtime: the key decoders of keys.hpp, and the
// StoreInspector over a store a real runtime wrote (objects, alarms, indexes, metadata).
#include "dorm/runtime/store_inspector.hpp"

#include <doctest/doctest.h>

#include <set>

#include "dorm/runtime/keys.hpp"
#include "runtime_fixture.hpp"

using namespace dorm;
using dorm::testing::must;
using dorm::testing::Reply;
using dorm::testing::RuntimeFixture;

TEST_CASE("keys: every key the runtime writes decodes back to its parts") {
  // The decoded parts are views into the key: each key is kept in a variable.
  const std::string body(16, '\x07');
  const std::string generation = keys::meta("generation");
  CHECK(keys::decode_meta(generation) == "generation");
  CHECK_FALSE(keys::decode_meta(std::string(1, keys::kMeta)));
  CHECK_FALSE(keys::decode_meta(keys::index_entry("x", "y")));

  const std::string data_key = keys::object_prefix("ns-a", body) + 'd' + "user/key";
  auto data = keys::decode_object_key(data_key);
  REQUIRE(data);
  CHECK(data->ns == "ns-a");
  CHECK(data->body == body);
  CHECK(data->kind == keys::kObjectData);
  CHECK(data->rest == "user/key");
  // The default alarm has an empty name; a user key may hold any byte.
  const std::string alarm_key = keys::object_prefix("ns-a", body) + 'a';
  auto alarm = keys::decode_object_key(alarm_key);
  REQUIRE(alarm);
  CHECK(alarm->kind == keys::kObjectAlarm);
  CHECK(alarm->rest.empty());
  const std::string binary_key = keys::object_prefix("n", body) + 'd' + std::string("\0\xff", 2);
  auto binary = keys::decode_object_key(binary_key);
  REQUIRE(binary);
  CHECK(binary->rest == std::string("\0\xff", 2));

  const std::string entry_key = keys::index_entry("mcp.inflight", std::string("a/\0b", 4));
  auto entry = keys::decode_index_key(entry_key);
  REQUIRE(entry);
  CHECK(entry->index == "mcp.inflight");
  CHECK(entry->entry == std::string("a/\0b", 4));
  const std::string empty_key = keys::index_prefix("dorm.alarms");
  auto empty_entry = keys::decode_index_key(empty_key);
  REQUIRE(empty_entry);
  CHECK(empty_entry->entry.empty());
}

TEST_CASE("keys: keys the runtime never writes do not decode") {
  const std::string body(16, 'b');
  CHECK_FALSE(keys::decode_object_key(""));
  CHECK_FALSE(keys::decode_object_key(keys::meta("generation")));
  CHECK_FALSE(keys::decode_object_key(std::string(1, keys::kObject) + "ns"));           // no 0x00
  CHECK_FALSE(keys::decode_object_key(keys::object_prefix("ns", body.substr(0, 15))));  // short
  CHECK_FALSE(keys::decode_object_key(keys::object_prefix("ns", body)));                // no kind
  CHECK_FALSE(keys::decode_object_key(keys::object_prefix("ns", body) + 'x'));  // unknown kind
  CHECK_FALSE(keys::decode_object_key(keys::object_prefix("Bad Name", body) + 'd'));
  CHECK_FALSE(keys::decode_index_key(keys::object_prefix("ns", body) + 'd'));
  CHECK_FALSE(keys::decode_index_key(std::string(1, keys::kIndex) + "no-terminator"));
  CHECK_FALSE(keys::decode_index_key(std::string(1, keys::kIndex) + std::string("\0e", 2)));
}

namespace {

using write_atom = caf::atom_constant<caf::atom("write")>;
using alarm_atom = caf::atom_constant<caf::atom("alarm")>;
using index_atom = caf::atom_constant<caf::atom("index")>;

class Thing : public DurableObject {
 public:
  void on_start(StartReason) override {}
  caf::behavior behavior() override {
    return {
        [this](write_atom, std::string key, std::string value) -> int {
          must(put(key, value).ok(), "put failed");
          return 0;
        },
        [this](alarm_atom, std::string name, std::int64_t due) -> int {
          must(set_alarm(name, due).ok(), "set_alarm failed");
          return 0;
        },
        [this](index_atom, std::string index, std::string key, std::string value) -> int {
          must(index_put(index, key, value).ok(), "index_put failed");
          return 0;
        },
    };
  }
  void on_alarm(const AlarmInfo&) override {}
};

struct InspectFixture : RuntimeFixture {
  InspectFixture() {
    for (const char* ns : {"things", "others"}) {
      REQUIRE(runtime->register_namespace(ns, [] { return std::make_unique<Thing>(); }).ok());
    }
  }
  template <class... Ts>
  void ask(std::string_view ns, std::string_view name, Ts... xs) {
    Reply r;
    runtime->request(handle(ns, name), r.handler(), xs...);
    runtime->run_until_idle();
    REQUIRE_MESSAGE(r.ok(), r.error_text());
  }
  StoreInspector inspector() {
    auto made = StoreInspector::open(memory);
    REQUIRE(made.ok());
    return std::move(made).value();
  }
};

}  // namespace

TEST_CASE("store inspector: metadata, namespaces, objects, alarms and indexes of a live runtime") {
  InspectFixture f;
  const std::int64_t now = f.clock.now_ms();
  f.ask("things", "a", write_atom::value, std::string("k1"), std::string("v1"));
  f.ask("things", "a", write_atom::value, std::string("k2"), std::string("value-2"));
  f.ask("things", "a", alarm_atom::value, std::string("later"), now + 60'000);
  f.ask("things", "a", alarm_atom::value, std::string(""), now + 5'000);
  f.ask("things", "b", alarm_atom::value, std::string("soon"), now + 1'000);
  f.ask("things", "c", write_atom::value, std::string("k"), std::string("v"));
  f.ask("others", "x", index_atom::value, std::string("my.index"), std::string("e1"),
        std::string("v1"));
  f.ask("others", "x", index_atom::value, std::string("my.index"), std::string("e2"),
        std::string(""));
  // y has index entries only: nothing under its own prefix, so it is not a stored object.
  f.ask("others", "y", index_atom::value, std::string("my.index"), std::string("e3"),
        std::string(""));
  f.ask("others", "x", write_atom::value, std::string("k"), std::string("v"));
  f.expected_active = 5;
  auto in = f.inspector();
  CHECK(in.ids_complete());

  auto state = in.runtime_state();
  REQUIRE(state.ok());
  CHECK(state->generation == f.runtime->generation());
  CHECK_FALSE(state->clean_shutdown);  // cleared while a runtime runs
  CHECK(state->has_id_secret);

  auto ns = in.namespaces();
  REQUIRE(ns.ok());
  REQUIRE(ns->size() == 2);
  CHECK((*ns)[0].ns == "others");
  CHECK((*ns)[0].objects == 1);
  CHECK((*ns)[1].ns == "things");
  CHECK((*ns)[1].objects == 3);  // b has only an alarm, and counts

  // Ids print as the runtime prints them, and name the same objects.
  auto things = in.objects("things", 0);
  REQUIRE(things.ok());
  REQUIRE(things->size() == 3);
  std::set<std::string> ids;
  for (const auto& o : *things) ids.insert(o.id);
  for (const char* name : {"a", "b", "c"}) {
    CHECK(ids.contains(f.runtime->id_from_name("things", name).to_string()));
  }
  // Paged: after the first, the rest.
  auto rest = in.objects("things", 5, (*things)[0].body);
  REQUIRE(rest.ok());
  REQUIRE(rest->size() == 2);
  CHECK((*rest)[0].id == (*things)[1].id);
  auto first = in.objects("things", 1);
  REQUIRE(first.ok());
  CHECK(first->size() == 1);

  std::string a_id = f.runtime->id_from_name("things", "a").to_string();
  auto by_id = in.find_object("things", a_id);
  REQUIRE(by_id.ok());
  REQUIRE(by_id->has_value());
  CHECK((*by_id)->id == a_id);
  auto by_name = in.find_object("things", "a");
  REQUIRE(by_name.ok());
  REQUIRE(by_name->has_value());
  CHECK((*by_name)->id == a_id);
  auto nobody = in.find_object("things", "never-used");
  REQUIRE(nobody.ok());
  CHECK_FALSE(nobody->has_value());
  // An id of another namespace is no id here (its MAC does not match): taken as a name.
  auto elsewhere = in.find_object("others", a_id);
  REQUIRE(elsewhere.ok());
  CHECK_FALSE(elsewhere->has_value());

  auto usage = in.usage(**by_id);
  REQUIRE(usage.ok());
  CHECK(usage->data_keys == 2);
  CHECK(usage->data_bytes == std::string("k1v1k2value-2").size());
  CHECK(usage->alarms == 2);

  auto own = in.object_alarms(**by_id);
  REQUIRE(own.ok());
  REQUIRE(own->size() == 2);
  CHECK((*own)[0].name == "");
  CHECK((*own)[0].due_ms == now + 5'000);
  CHECK((*own)[1].name == "later");
  CHECK((*own)[1].due_ms == now + 60'000);

  // Every alarm, earliest first, from the index; the versions match the objects' records.
  auto all = in.alarms(0);
  REQUIRE(all.ok());
  REQUIRE(all->size() == 3);
  CHECK((*all)[0].name == "soon");
  CHECK((*all)[0].object.id == f.runtime->id_from_name("things", "b").to_string());
  CHECK((*all)[1].name == "");
  CHECK((*all)[1].version == (*own)[0].version);
  CHECK((*all)[2].name == "later");
  CHECK((*all)[2].due_ms == now + 60'000);
  auto two = in.alarms(2);
  REQUIRE(two.ok());
  CHECK(two->size() == 2);

  auto indexes = in.indexes();
  REQUIRE(indexes.ok());
  REQUIRE(indexes->size() == 2);
  CHECK((*indexes)[0].index == "dorm.alarms");
  CHECK((*indexes)[0].entries == 3);
  CHECK((*indexes)[1].index == "my.index");
  CHECK((*indexes)[1].entries == 3);
  auto entries = in.index_entries("my.index", 2);
  REQUIRE(entries.ok());
  REQUIRE(entries->size() == 2);
  CHECK((*entries)[0].key == "e1");
  CHECK((*entries)[0].value == "v1");
  CHECK((*entries)[1].key == "e2");

  // Nothing was written.
  auto after = StoreInspector::open(f.memory);
  REQUIRE(after.ok());
}

TEST_CASE("store inspector: the clean-shutdown marker, and a store that was never used") {
  {
    storage::MemoryBackend empty;
    auto in = StoreInspector::open(empty);
    REQUIRE(in.ok());
    CHECK_FALSE(in->ids_complete());
    auto state = in->runtime_state();
    REQUIRE(state.ok());
    CHECK_FALSE(state->generation);
    CHECK_FALSE(state->has_id_secret);
    CHECK(in->namespaces()->empty());
    CHECK(in->indexes()->empty());
    CHECK(in->alarms(0)->empty());
  }
  InspectFixture f;
  f.ask("things", "a", write_atom::value, std::string("k"), std::string("v"));
  f.expected_active = 1;
  std::uint64_t generation = f.runtime->generation();
  f.stop();
  auto state = f.inspector().runtime_state();
  REQUIRE(state.ok());
  CHECK(state->generation == generation);
  CHECK(state->clean_shutdown == generation);
}

TEST_CASE("store inspector: without the id secret, ids print as their body and are found by it") {
  InspectFixture f;
  f.ask("things", "a", write_atom::value, std::string("k"), std::string("v"));
  f.expected_active = 1;
  ObjectId id = f.runtime->id_from_name("things", "a");
  // A copy of the store without its secret, as a runtime given RuntimeOptions::secret leaves it.
  storage::MemoryBackend copy;
  storage::WriteBatch all;
  auto everything = f.memory.scan({});
  REQUIRE(everything.ok());
  for (const auto& kv : *everything) {
    if (kv.key != keys::meta(keys::kMetaIdSecret)) all.put(kv.key, kv.value);
  }
  REQUIRE(copy.commit(all).ok());
  auto in = StoreInspector::open(copy);
  REQUIRE(in.ok());
  CHECK_FALSE(in->ids_complete());
  auto objects = in->objects("things", 0);
  REQUIRE(objects.ok());
  REQUIRE(objects->size() == 1);
  std::string body_hex = id.to_string().substr(0, 32);
  CHECK((*objects)[0].id == body_hex);
  for (const std::string& text : {body_hex, id.to_string()}) {
    auto found = in->find_object("things", text);
    REQUIRE(found.ok());
    REQUIRE(found->has_value());
    CHECK((*found)->body == std::string(id.body()));
  }
  auto by_name = in->find_object("things", "a");
  REQUIRE_FALSE(by_name.ok());
  CHECK(by_name.error().code == ErrorCode::invalid_argument);
  CHECK(by_name.error().message.find("no id secret") != std::string::npos);
}

TEST_CASE("store inspector: counts a namespace's objects and an index's entries, and stops when told") {
  InspectFixture f;
  const std::int64_t now = f.clock.now_ms();
  for (const char* name : {"a", "b", "c"}) {
    f.ask("things", name, write_atom::value, std::string("k"), std::string("v"));
  }
  f.ask("things", "a", alarm_atom::value, std::string("later"), now + 60'000);
  f.ask("others", "x", alarm_atom::value, std::string(""), now + 5'000);
  for (const char* entry : {"e1", "e2", "e3"}) {
    f.ask("others", "y", index_atom::value, std::string("my.index"), std::string(entry), std::string(""));
  }
  f.expected_active = 5;
  auto in = f.inspector();
  CHECK(in.count_objects("things").value_or_throw() == 3);
  CHECK(in.count_objects("others").value_or_throw() == 1);  // y holds index entries only
  CHECK(in.count_objects("nobody").value_or_throw() == 0);
  CHECK(in.count_index_entries("my.index").value_or_throw() == 3);
  CHECK(in.count_index_entries(keys::kAlarmIndex).value_or_throw() == 2);
  CHECK(in.count_index_entries("no.such.index").value_or_throw() == 0);

  std::atomic<bool> stop{true};
  auto stopped = in.count_objects("things", &stop);
  REQUIRE_FALSE(stopped.ok());
  CHECK(stopped.error().code == ErrorCode::unavailable);
  CHECK(in.count_index_entries("my.index", &stop).error().code == ErrorCode::unavailable);
}
