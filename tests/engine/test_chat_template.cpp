// Chat-template engine: every case of ../shared/peer/templates/cases.json (rendered by
// Python jinja2 the way Hugging Face does) must come out byte for byte; plus unit tests of
// the tricky semantics and a robustness sweep over mutated real templates.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <random>

#include "engine/chat/chat_template.h"
#include "engine/chat/json.h"
#include "engine/gguf/gguf_writer.h"
#include "support/test_support.h"

namespace chorus::chat {
namespace {

RenderOptions test_options() {
  RenderOptions o;
  o.clock = fixed_clock(2026, 12, 2, 12, 0, 0);
  return o;
}

const std::filesystem::path& templates_dir() {
  static const auto dir = test::peer_dir() / "templates";
  return dir;
}

Value cases_json() {
  static const Value cases = [] {
    auto parsed = parse_json(test::read_file(templates_dir() / "cases.json"));
    EXPECT_TRUE(parsed.ok()) << (parsed.ok() ? "" : parsed.message());
    return parsed.ok() ? parsed.value() : Value::dict();
  }();
  return cases;
}

const Value* field(const Value& dict, const char* key) { return dict.dict_data().find(key); }

// First differing byte with a little context on both sides.
std::string diff_hint(const std::string& want, const std::string& got) {
  size_t i = 0;
  while (i < want.size() && i < got.size() && want[i] == got[i]) ++i;
  const size_t from = i > 40 ? i - 40 : 0;
  auto excerpt = [&](const std::string& s) {
    auto j = parse_json("\"\"");
    (void)j;
    std::string e = s.substr(std::min(from, s.size()), 100);
    auto dumped = dump_json(Value::string(e));
    return dumped.ok() ? *dumped : e;
  };
  return "first difference at byte " + std::to_string(i) + "\n    want: " + excerpt(want) +
         "\n    got:  " + excerpt(got);
}

TEST(ChatTemplateCases, AllPeerCasesMatchJinja2) {
  const Value root = cases_json();
  const Value* cases = field(root, "cases");
  ASSERT_TRUE(cases && cases->is_list());
  size_t n_pass = 0;
  std::string failures;
  for (const Value& c : cases->items()) {
    const std::string name = to_str(*field(c, "template")) + " / " + to_str(*field(c, "conversation")) +
                             " / add_generation_prompt=" + to_str(*field(*field(c, "context"), "add_generation_prompt"));
    const std::string source = test::read_file(templates_dir() / to_str(*field(c, "template")));
    auto rendered = render_template(source, *field(c, "context"), test_options());
    if (const Value* want = field(c, "expected")) {
      if (!rendered.ok()) {
        failures += "FAIL " + name + ": error: " + rendered.message() + "\n";
      } else if (*rendered != want->as_string()) {
        failures += "FAIL " + name + ": " + diff_hint(want->as_string(), *rendered) + "\n";
      } else {
        ++n_pass;
      }
    } else if (rendered.ok()) {
      failures += "FAIL " + name + ": expected an error (" + to_str(*field(c, "expected_error")) + "), got output\n";
    } else {
      ++n_pass;
    }
  }
  std::printf("chat template cases: %zu / %zu pass\n", n_pass, cases->items().size());
  EXPECT_EQ(n_pass, cases->items().size()) << failures;
}

std::string render(const std::string& source, const std::string& context_json = "{}") {
  auto ctx = parse_json(context_json);
  EXPECT_TRUE(ctx.ok());
  auto out = render_template(source, ctx.value(), test_options());
  return out.ok() ? *out : "ERROR: " + out.message();
}

bool fails(const std::string& source, const std::string& context_json = "{}") {
  return render(source, context_json).rfind("ERROR: ", 0) == 0;
}

TEST(ChatTemplate, WhitespaceControl) {
  EXPECT_EQ(render("a  {{- 'b' -}}  c"), "abc");
  EXPECT_EQ(render("{% if true %}\nx\n{% endif %}\ny"), "x\ny");  // trim_blocks
  EXPECT_EQ(render("  {% if true %}x{% endif %}"), "x");           // lstrip_blocks
  EXPECT_EQ(render("  {{ 'x' }}"), "  x");                           // not for {{ }}
  EXPECT_EQ(render("  {%+ if true %}x{% endif %}"), "  x");
  EXPECT_EQ(render("a\n{# note #}\nb"), "a\nb");
  EXPECT_EQ(render("a\n"), "a");                                     // keep_trailing_newline=False
  EXPECT_EQ(render("{% raw %}{{ x }}{% endraw %}"), "{{ x }}");
}

TEST(ChatTemplate, LoopVariables) {
  EXPECT_EQ(render("{% for x in 'abc' %}{{ loop.index }}{{ loop.revindex0 }}{{ loop.first }}{% endfor %}"),
            "12True21False30False");
  EXPECT_EQ(render("{% for x in [1,2,3] %}{{ loop.previtem }}|{{ loop.nextitem }};{% endfor %}"), "|2;1|3;2|;");
  EXPECT_EQ(render("{% for x in range(6) if x is odd %}{{ x }}/{{ loop.length }} {% endfor %}"), "1/3 3/3 5/3 ");
  EXPECT_EQ(render("{% for x in [] %}a{% else %}empty{% endfor %}"), "empty");
  EXPECT_EQ(render("{% for a, b in [(1, 2), (3, 4)] %}{{ a + b }}{% endfor %}"), "37");
  EXPECT_EQ(render("{% for x in range(9) %}{% if x == 3 %}{% break %}{% endif %}{% if x is even %}{% continue %}{% endif %}{{ x }}{% endfor %}"), "1");
  EXPECT_EQ(render("{% for x in range(3) %}{{ loop.cycle('a', 'b') }}{% endfor %}"), "aba");
  EXPECT_EQ(render("{% for k, v in {'a': 1, 'b': 2}.items() %}{{ k }}={{ v }} {% endfor %}"), "a=1 b=2 ");
}

TEST(ChatTemplate, ScopingAndNamespace) {
  EXPECT_EQ(render("{% set x = 1 %}{% for i in [1] %}{% set x = 2 %}{% endfor %}{{ x }}"), "1");
  EXPECT_EQ(render("{% set x = 1 %}{% if true %}{% set x = 2 %}{% endif %}{{ x }}"), "2");
  EXPECT_EQ(render("{% set ns = namespace(n=0) %}{% for i in [1, 2, 3] %}{% set ns.n = ns.n + i %}{% endfor %}{{ ns.n }}"), "6");
  EXPECT_EQ(render("{% set t %}a{{ 1 + 1 }}{% endset %}[{{ t }}]"), "[a2]");
  EXPECT_EQ(render("{% set t | upper %}abc{% endset %}{{ t }}"), "ABC");
  EXPECT_TRUE(fails("{% set x = 1 %}{% set x.a = 2 %}"));
}

TEST(ChatTemplate, MacrosAndCall) {
  EXPECT_EQ(render("{% macro f(a, b='B') %}{{ a }}{{ b }}{% endmacro %}{{ f(1) }}{{ f(1, b=2) }}{{ f(b=3, a=4) }}"), "1B1243");
  EXPECT_EQ(render("{% macro f(a) %}[{{ caller(a * 2) }}]{% endmacro %}{% call(x) f(5) %}got {{ x }}{% endcall %}"), "[got 10]");
  EXPECT_EQ(render("{% macro f() %}{{ varargs }}{{ kwargs }}{% endmacro %}{{ f(1, k=2) }}"), "(1,){'k': 2}");
  EXPECT_EQ(render("{% filter upper %}abc{% endfilter %}"), "ABC");
}

TEST(ChatTemplate, ToJson) {
  EXPECT_EQ(render("{{ {'a': [1, 2.5, none, true], 'é': 'x\"'} | tojson }}"), "{\"a\": [1, 2.5, null, true], \"é\": \"x\\\"\"}");
  EXPECT_EQ(render("{{ {'b': 1, 'a': {}} | tojson(indent=2, sort_keys=true) }}"), "{\n  \"a\": {},\n  \"b\": 1\n}");
  EXPECT_EQ(render("{{ [1, 2] | tojson(separators=(',', ':')) }}"), "[1,2]");
  EXPECT_EQ(render("{{ 'é' | tojson(ensure_ascii=true) }}"), "\"\\u00e9\"");
  EXPECT_TRUE(fails("{{ nothing | tojson }}"));
}

TEST(ChatTemplate, SlicingAndStrings) {
  EXPECT_EQ(render("{{ 'hello'[1:3] }}{{ 'hello'[::-1] }}{{ [1, 2, 3][-2:] }}{{ 'héllo'[1] }}"), "elolleh[2, 3]é");
  EXPECT_EQ(render("{{ '  a b  '.strip() }}|{{ 'xxaxx'.strip('x') }}|{{ 'a,b,c'.split(',', 1) }}|{{ 'a b'.split() }}"),
            "a b|a|['a', 'b,c']|['a', 'b']");
  EXPECT_EQ(render("{{ 'abc'.startswith(('x', 'a')) }}{{ 'a-b'.replace('-', '+') }}{{ 'ab'.upper() }}{{ 'hello world'.title() }}"),
            "Truea+bABHello World");
  EXPECT_EQ(render("{{ \"it's\" }} {{ [\"it's\", 'a\"b'] }} {{ none }} {{ (1,) }}"), "it's [\"it's\", 'a\"b'] None (1,)");
}

TEST(ChatTemplate, ArithmeticLikePython) {
  EXPECT_EQ(render("{{ 7 // 2 }} {{ -7 // 2 }} {{ -7 % 3 }} {{ 10 / 4 }} {{ 2 ** 10 }} {{ 1e16 }} {{ 0.1 + 0.2 }} {{ 3 * 'ab' }}"),
            "3 -4 2 2.5 1024 1e+16 0.30000000000000004 ababab");
  EXPECT_EQ(render("{{ 1 if false }}|{{ 'a' ~ 1 ~ none }}|{{ 1 < 2 < 3 }}|{{ 'b' in 'abc' }}|{{ 2 not in [1] }}"), "|a1None|True|True|True");
  EXPECT_TRUE(fails("{{ 1 / 0 }}"));
}

TEST(ChatTemplate, UndefinedSemantics) {
  EXPECT_EQ(render("[{{ missing }}]{{ missing is defined }}{{ missing | default('d') }}{{ missing | length }}"), "[]Falsed0");
  EXPECT_EQ(render("{{ {'a': 1}.b is defined }}{{ none.x is defined }}"), "FalseFalse");
  EXPECT_TRUE(fails("{{ missing.attr }}"));
  EXPECT_TRUE(fails("{{ missing + 1 }}"));
  EXPECT_TRUE(fails("{{ raise_exception('boom') }}"));
  EXPECT_TRUE(fails("{{ 1 | no_such_filter }}"));
  EXPECT_EQ(render("{% if false %}{{ 1 | no_such_filter }}{% endif %}ok"), "ok");  // jinja2 defers inside if
  EXPECT_TRUE(fails("{{ [].append(1) }}"));  // immutable sandbox
}

TEST(ChatTemplate, Filters) {
  EXPECT_EQ(render("{{ [3, 1, 2] | sort | join(',') }}|{{ ['b', 'A'] | sort | first }}|{{ [1, 1, 2] | unique | list }}"), "1,2,3|A|[1, 2]");
  EXPECT_EQ(render("{{ [{'a': 1}, {'a': 2}, {}] | selectattr('a', 'defined') | map(attribute='a') | list }}"), "[1, 2]");
  EXPECT_EQ(render("{{ [1, 2, 3, 4] | select('even') | list }}{{ [1, 2] | reject('odd') | sum }}"), "[2, 4]2");
  EXPECT_EQ(render("{{ 'a\nb' | indent(2) }}|{{ 'x' | center(5) }}|{{ '3.7' | float | int }}|{{ 2.675 | round(2) }}"), "a\n  b|  x  |3|2.67");
  EXPECT_EQ(render("{{ {'b': 1, 'a': 2} | dictsort }}{{ {'a': 1} | items | list }}"), "[('a', 2), ('b', 1)][('a', 1)]");
  EXPECT_EQ(render("{{ 'hello world foo' | truncate(9, leeway=0) }}|{{ 'a b c' | wordcount }}|{{ '%s=%d' | format('x', 3) }}"), "hello...|3|x=3");
}

// jinja2 quirks real templates trip over: generator-valued filters and markupsafe.Markup.
TEST(ChatTemplate, GeneratorsAndMarkupLikeJinja2) {
  EXPECT_EQ(render("{{ 'yes' if [] | select else 'no' }}"), "yes");  // a generator is always truthy
  EXPECT_TRUE(fails("{{ [1] | map('string') | tojson }}"));          // and not JSON serializable
  EXPECT_TRUE(fails("{{ [1] | select | length }}"));
  EXPECT_EQ(render("{{ [1, 2] | map('string') | list | tojson }}"), "[\"1\", \"2\"]");
  EXPECT_EQ(render("{{ 'a<'|safe + '\"<b>' }}|{{ '<x>' + '&'|safe }}|{{ 'a<'|safe ~ '<' }}"), "a<&#34;&lt;b&gt;|&lt;x&gt;&|a<<");
}

TEST(ChatTemplate, StrftimeNowUsesInjectedClock) {
  EXPECT_EQ(render("{{ strftime_now('%Y-%m-%d %H:%M %a %b') }}"), "2026-12-02 12:00 Wed Dec");
}

TEST(ChatTemplate, JsonRoundTrip) {
  auto v = parse_json(R"({"z": 1, "a": [true, null, 1.5, "\u00e9\ud83d\ude00"], "n": -0.0001})");
  ASSERT_TRUE(v.ok());
  auto text = dump_json(*v);
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(*text, "{\"z\": 1, \"a\": [true, null, 1.5, \"é😀\"], \"n\": -0.0001}");
  EXPECT_FALSE(parse_json("{\"a\": }").ok());
  EXPECT_FALSE(parse_json(std::string(100000, '[')).ok());
}

TEST(ChatTemplate, ApplyChatTemplateConvenience) {
  auto out = apply_chat_template("{{ bos_token }}{% for m in messages %}<{{ m.role }}>{{ m.content }}{% endfor %}"
                                 "{% if add_generation_prompt %}<assistant>{% endif %}",
                                 {{"user", "hi"}}, GenerationPrompt::kAdd, "<s>", "</s>");
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(*out, "<s><user>hi<assistant>");
}

TEST(ChatTemplate, LimitsStopRunawayTemplates) {
  RenderOptions options = test_options();
  options.max_steps = 200'000;  // the default is larger; the point here is that a limit holds
  auto fails_within_limits = [&](const std::string& source) {
    return !render_template(source, Value::dict(), options).ok();
  };
  EXPECT_TRUE(fails_within_limits("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}"));
  EXPECT_TRUE(fails_within_limits("{{ 'x' * 100000000 }}"));
  // Empty units repeat to empty at once, however large the count (a fuzzer-found hang).
  EXPECT_EQ(render("{{ 444944444944 * '' }}|{{ ([] * 444944444944) | length }}|{{ (() * 444944444944) | length }}"), "|0|0");
  EXPECT_TRUE(fails_within_limits("{% set ns = namespace(s='xxxxxxxxxxxxxxxx') %}{% for i in range(30) %}{% set ns.s = ns.s ~ ns.s %}{{ ns.s }}{% endfor %}"));
  EXPECT_TRUE(fails_within_limits("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}"));
  EXPECT_TRUE(fails_within_limits("{{" + std::string(5000, '(') + "1" + std::string(5000, ')') + "}}"));
  EXPECT_TRUE(fails_within_limits("{{" + std::string(3000, '[') + std::string(3000, ']') + "}}"));
  EXPECT_TRUE(fails_within_limits("{{ range(1000000) }}"));
}

// CHORUS_CLI when ctest sets it, else the chorus-cli built beside this test binary.
std::string cli_binary() {
  if (std::getenv("CHORUS_CLI")) return test::cli_path();
  return (std::filesystem::read_symlink("/proc/self/exe").parent_path() / "chorus-cli").string();
}

// chorus-cli template: exact text on stdout; 2 for template errors, 1 for bad input.
TEST(ChatTemplateCli, RendersFromFileAndGgufWithExitCodes) {
  const auto dir = test::scratch_dir();
  const std::string cli = cli_binary();
  ASSERT_TRUE(std::filesystem::exists(cli)) << cli << " not built";
  const std::string tmpl = "{{ bos_token }}{% for m in messages %}[{{ m.role }}]{{ m.content }}{% endfor %}"
                           "{% if add_generation_prompt %}[assistant]{% endif %}{{ tools | length }}";
  test::write_file(dir / "t.jinja", tmpl);
  test::write_file(dir / "ctx.json", R"({"messages": [{"role": "user", "content": "hi\n"}],
      "add_generation_prompt": true, "bos_token": "<s>", "eos_token": "</s>", "tools": [1, 2]})");
  std::string out, err;
  ASSERT_EQ(test::run_command(cli + " template --template " + (dir / "t.jinja").string() + " --context " +
                                  (dir / "ctx.json").string(), &out, &err), 0) << err;
  EXPECT_EQ(out, "<s>[user]hi\n[assistant]2");

  gguf::Writer writer;
  writer.set("general.architecture", gguf::Value::make_string("llama"));
  writer.set("tokenizer.chat_template", gguf::Value::make_string(tmpl));
  ASSERT_TRUE(writer.write_file((dir / "m.gguf").string()).ok());
  ASSERT_EQ(test::run_command(cli + " template --model " + (dir / "m.gguf").string() + " --context " +
                                  (dir / "ctx.json").string(), &out, &err), 0) << err;
  EXPECT_EQ(out, "<s>[user]hi\n[assistant]2");

  test::write_file(dir / "raise.jinja", "{{ raise_exception('Only user roles please') }}");
  EXPECT_EQ(test::run_command(cli + " template --template " + (dir / "raise.jinja").string() + " --context " +
                                  (dir / "ctx.json").string(), &out, &err), 2);
  EXPECT_NE(err.find("Only user roles please"), std::string::npos) << err;
  EXPECT_EQ(test::run_command(cli + " template --template " + (dir / "missing.jinja").string() + " --context " +
                                  (dir / "ctx.json").string(), &out, &err), 1);
  EXPECT_EQ(test::run_command(cli + " template --template " + (dir / "t.jinja").string(), &out, &err), 1);
}

// Random byte mutations and truncations of the real templates: each must return (value or
// error) quickly, never crash or hang.
TEST(ChatTemplateRobustness, MutatedRealTemplatesReturnPromptly) {
  std::vector<std::string> sources;
  for (const auto& entry : std::filesystem::directory_iterator(templates_dir()))
    if (entry.path().extension() == ".jinja") sources.push_back(test::read_file(entry.path()));
  ASSERT_FALSE(sources.empty());
  const Value root = cases_json();
  const Value context = *field(field(root, "cases")->items()[0], "context");
  std::mt19937 rng(1234);
  const char* fragments[] = {"{{", "}}", "{%", "%}", "{#", "#}", "-", "(", ")", "[", "]", "'", "\"",
                             " if ", " for ", " in ", "|", ".", "endif", "endfor", "loop", "**", "~"};
  RenderOptions options = test_options();
  options.max_steps = 2'000'000;
  double worst_ms = 0;
  for (int iter = 0; iter < 3000; ++iter) {
    std::string s = sources[rng() % sources.size()];
    const int n_mutations = 1 + static_cast<int>(rng() % 8);
    for (int m = 0; m < n_mutations && !s.empty(); ++m) {
      const size_t at = rng() % s.size();
      switch (rng() % 4) {
        case 0: s[at] = static_cast<char>(rng() % 256); break;
        case 1: s.erase(at, 1 + rng() % 16); break;
        case 2: s.insert(at, fragments[rng() % (sizeof fragments / sizeof *fragments)]); break;
        default: s.resize(at); break;
      }
    }
    const auto t0 = std::chrono::steady_clock::now();
    auto out = render_template(s, context, options);
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    worst_ms = std::max(worst_ms, ms);
    ASSERT_LT(ms, 2000.0) << "mutation " << iter << " took too long";
    (void)out;
  }
  std::printf("worst render of a mutated template: %.1f ms\n", worst_ms);
}

}  // namespace
}  // namespace chorus::chat
