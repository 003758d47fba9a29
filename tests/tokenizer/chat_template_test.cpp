// Unit tests of the chat template interpreter: expressions, filters, tests,
// whitespace control, loops, namespaces, macros, errors and the limits that
// stop hostile templates. Expected strings are what jinja2 (as transformers
// configures it) renders.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "bundle/chat_template_source.h"
#include "jinja/chat_template.h"
#include "jinja/chat_template_eval.h"
#include "test_util.h"

namespace zl {
namespace {

using Json = nlohmann::ordered_json;

StatusOr<std::string> render(const std::string& source, const Json& context = Json::object(),
                             const ChatTemplateLimits& limits = {}) {
  ZL_ASSIGN_OR_RETURN(ChatTemplate t, ChatTemplate::parse(source, "t", limits));
  return t.render(context);
}

std::string ok(const std::string& source, const Json& context = Json::object()) {
  StatusOr<std::string> out = render(source, context);
  EXPECT_TRUE(out.ok()) << source.substr(0, 200) << " -> " << out.status().to_string();
  return out.ok() ? *out : "<error>";
}

std::string err(const std::string& source, const Json& context = Json::object(), const ChatTemplateLimits& limits = {}) {
  StatusOr<std::string> out = render(source, context, limits);
  EXPECT_FALSE(out.ok()) << source.substr(0, 200) << " rendered " << (out.ok() ? out->substr(0, 200) : "");
  return out.ok() ? "" : out.status().message();
}

TEST(ChatTemplate, Literals) {
  EXPECT_EQ(ok("{{ 1 }} {{ 1.0 }} {{ 0.1 }} {{ 1e20 }} {{ 1.5e-7 }} {{ -3 }}"), "1 1.0 0.1 1e+20 1.5e-07 -3");
  EXPECT_EQ(ok("{{ true }} {{ False }} {{ none }} {{ 'a' 'b' }}"), "True False None ab");
  EXPECT_EQ(ok(R"({{ "tab\tnl\nq\"" }}|{{ '\u00e9' }})"), "tab\tnl\nq\"|\xC3\xA9");
  EXPECT_EQ(ok("{{ [1, 'a', none, true] }} {{ {'k': [1.5]} }} {{ (1, 2) }}"), "[1, 'a', None, True] {'k': [1.5]} [1, 2]");
  EXPECT_EQ(ok("{{ [\"it's\"] }}"), "[\"it's\"]");
}

TEST(ChatTemplate, Operators) {
  EXPECT_EQ(ok("{{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }} {{ 7 / 2 }} {{ 2 ** 10 }} {{ 1 + 2 * 3 }}"),
            "3 -4 1 2 3.5 1024 7");
  EXPECT_EQ(ok("{{ 'a' ~ 1 ~ none }} {{ 'ab' * 2 }} {{ [1] + [2] }} {{ 1 + 1.5 }}"), "a1None abab [1, 2] 2.5");
  EXPECT_EQ(ok("{{ 1 < 2 < 3 }} {{ 1 == 1.0 }} {{ 'b' > 'a' }} {{ [1,2] == [1,2] }} {{ true == 1 }}"),
            "True True True True True");
  EXPECT_EQ(ok("{{ 'a' in 'cat' }} {{ 2 in [1,2] }} {{ 'k' in {'k':1} }} {{ 3 not in [1] }}"), "True True True True");
  EXPECT_EQ(ok("{{ 0 or 'x' }} {{ 1 and 'y' }} {{ not 0 }} {{ 'a' if false else 'b' }}|{{ 'a' if false }}|"),
            "x y True b||");
  EXPECT_EQ(ok("{{ '%s-%d' % ('a', 3) }}"), "a-3");
}

TEST(ChatTemplate, SubscriptsAndSlices) {
  Json ctx = {{"s", "héllo"}, {"l", {1, 2, 3, 4}}, {"d", {{"a", {{"b", 5}}}}}};
  EXPECT_EQ(ok("{{ s[1] }} {{ s[::-1] }} {{ s[1:3] }} {{ l[-1] }} {{ l[1:] }} {{ l[::2] }} {{ l[:-1] }}", ctx),
            "é olléh él 4 [2, 3, 4] [1, 3] [1, 2, 3]");
  EXPECT_EQ(ok("{{ d.a.b }} {{ d['a']['b'] }} {{ d.a.missing }}|{{ l[10] }}|", ctx), "5 5 ||");
}

TEST(ChatTemplate, Undefined) {
  EXPECT_EQ(ok("[{{ x }}]{% if x %}t{% else %}f{% endif %}{{ x is defined }}{{ x|length }}{{ x|default('d') }}"),
            "[]fFalse0d");
  EXPECT_NE(err("{{ x.y }}").find("'x' is undefined"), std::string::npos);
  EXPECT_NE(err("{{ x + 1 }}").find("'x' is undefined"), std::string::npos);
  EXPECT_NE(err("{{ d.a.b }}", {{"d", Json::object()}}).find("'dict object' has no attribute 'a'"), std::string::npos);
  EXPECT_EQ(ok("{% for i in x %}no{% endfor %}{{ none.a is defined }}"), "False");
}

TEST(ChatTemplate, Filters) {
  Json ctx = {{"m", {{"b", 1}, {"a", "é\n"}}}, {"l", {3, 1, 2}},
              {"users", {{{"name", "x"}, {"on", true}}, {{"name", "y"}, {"on", false}}}}};
  EXPECT_EQ(ok("{{ m|tojson }}|{{ m|tojson(indent=2) }}", ctx), "{\"b\": 1, \"a\": \"é\\n\"}|{\n  \"b\": 1,\n  \"a\": \"é\\n\"\n}");
  EXPECT_EQ(ok("{{ '  x '|trim }}|{{ 'ab'|upper }}|{{ 'hello world'|title }}|{{ 'hEY'|capitalize }}|{{ 'aXb'|lower }}"),
            "x|AB|Hello World|Hey|axb");
  EXPECT_EQ(ok("{{ l|sort }} {{ l|sort(reverse=true)|join(',') }} {{ l|length }} {{ l|first }} {{ l|last }} {{ l|sum }}", ctx),
            "[1, 2, 3] 3,2,1 3 3 2 6");
  EXPECT_EQ(ok("{{ users|selectattr('on')|map(attribute='name')|list }} {{ users|rejectattr('on')|map(attribute='name')|join }}", ctx),
            "['x'] y");
  EXPECT_EQ(ok("{{ users|selectattr('name', 'equalto', 'y')|list|length }} {{ ['a','b']|map('upper')|list }}", ctx),
            "1 ['A', 'B']");
  EXPECT_EQ(ok("{{ m|items|list }} {{ m|dictsort }} {{ ['a','A','b']|unique|list }} {{ [1,2,3]|reverse|list }}", ctx),
            "[['b', 1], ['a', 'é\\n']] [['a', 'é\\n'], ['b', 1]] ['a', 'b'] [3, 2, 1]");
  EXPECT_EQ(ok("{{ 'a-b'|replace('-', '+') }} {{ '3'|int + 1 }} {{ '2.5'|float }} {{ -3|abs }} {{ 2.567|round(2) }}"),
            "a+b 4 2.5 3 2.57");
  EXPECT_EQ(ok("{{ 'a\nb'|indent(2) }}|{{ 'x'|center(5) }}|{{ 'one two'|wordcount }}|{{ none|string }}"), "a\n  b|  x  |2|None");
  EXPECT_EQ(ok("{{ [1,2,3,4,5]|batch(2)|list }} {{ [3,1]|min }} {{ [3,1]|max }} {{ '<a>'|e }}"),
            "[[1, 2], [3, 4], [5]] 1 3 &lt;a&gt;");
  EXPECT_NE(err("{{ 1|nosuchfilter }}").find("No filter named 'nosuchfilter'"), std::string::npos);
}

TEST(ChatTemplate, Tests) {
  EXPECT_EQ(ok("{{ 'a' is string }}{{ 1 is number }}{{ 1 is integer }}{{ 1.0 is float }}{{ {} is mapping }}"
               "{{ [] is iterable }}{{ 'x' is sequence }}{{ true is boolean }}{{ none is none }}"),
            "TrueTrueTrueTrueTrueTrueTrueTrueTrue");
  EXPECT_EQ(ok("{{ 4 is even }}{{ 3 is odd }}{{ 9 is divisibleby 3 }}{{ 9 is divisibleby(2) }}{{ 1 is eq 1 }}"
               "{{ 2 is in [1,2] }}{{ true is true }}{{ 0 is false }}{{ x is not defined }}{{ 'ab' is lower }}"),
            "TrueTrueTrueFalseTrueTrueTrueFalseTrueTrue");
}

TEST(ChatTemplate, Methods) {
  Json ctx = {{"d", {{"a", 1}, {"b", 2}}}, {"s", "  a,b,,c  "}};
  EXPECT_EQ(ok("{{ s.strip() }}|{{ s.split(',') }}|{{ 'a b  c'.split() }}|{{ s.lstrip() }}|{{ 'xxhixx'.strip('x') }}", ctx),
            "a,b,,c|['  a', 'b', '', 'c  ']|['a', 'b', 'c']|a,b,,c  |hi");
  EXPECT_EQ(ok("{{ 'abc'.startswith('ab') }} {{ 'abc'.endswith(('x', 'c')) }} {{ 'a'.upper() }} {{ 'abca'.find('c') }}"
               " {{ 'a-b'.replace('-', '') }} {{ '{}+{x}'.format(1, x=2) }} {{ 'a,b,c'.rsplit(',', 1) }}"),
            "True True A 2 ab 1+2 ['a,b', 'c']");
  EXPECT_EQ(ok("{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}{{ d.keys()|list }}{{ d.values()|list }}"
               "{{ d.get('a') }}{{ d.get('z', 9) }}{{ d.get('z') }}",
               ctx),
            "a=1;b=2;['a', 'b'][1, 2]19None");
  EXPECT_NE(err("{% set l = [] %}{{ l.append(1) }}").find("unsafe"), std::string::npos);
}

TEST(ChatTemplate, WhitespaceControl) {
  // trim_blocks drops the newline after a block tag; lstrip_blocks the indentation before it.
  EXPECT_EQ(ok("{% if true %}\n  yes\n{% endif %}\nend"), "  yes\nend");
  EXPECT_EQ(ok("a\n    {% if true %}\nb\n    {% endif %}\nc"), "a\nb\nc");
  EXPECT_EQ(ok("a  {{- ' b ' -}}  c"), "a b c");
  EXPECT_EQ(ok("a  {%- if true -%}  b  {%- endif -%}  c"), "abc");
  EXPECT_EQ(ok("a {# comment #}\nb {#- c -#}  c"), "a bc");
  EXPECT_EQ(ok("x\n  {# c #}\ny"), "x\ny");
  EXPECT_EQ(ok("  {{ 'x' }}\n"), "  x");  // no lstrip for {{, one trailing newline dropped
  EXPECT_EQ(ok("{% if true +%}\nx{% endif %}"), "\nx");
  EXPECT_EQ(ok("line\r\nnext"), "line\nnext");
}

TEST(ChatTemplate, Loops) {
  EXPECT_EQ(ok("{% for x in ['a','b','c'] %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.first }}"
               "{{ loop.last }}{{ loop.length }}{{ loop.previtem }}{{ loop.nextitem }};{% endfor %}"),
            "103TrueFalse3b;212FalseFalse3ac;321FalseTrue3b;");
  EXPECT_EQ(ok("{% for x in range(10) if x is odd %}{{ x }}{{ '' if loop.last else ',' }}{% endfor %}"), "1,3,5,7,9");
  EXPECT_EQ(ok("{% for x in [] %}no{% else %}empty{% endfor %}"), "empty");
  EXPECT_EQ(ok("{% for x in range(5) %}{% if x == 1 %}{% continue %}{% endif %}{% if x == 3 %}{% break %}{% endif %}{{ x }}{% endfor %}"),
            "02");
  EXPECT_EQ(ok("{% for a, b in [[1, 2], [3, 4]] %}{{ a + b }}{% endfor %}{% for c in 'hé' %}[{{ c }}]{% endfor %}"), "37[h][é]");
  // A set inside a loop does not leak out; a namespace does.
  EXPECT_EQ(ok("{% set x = 1 %}{% set ns = namespace(n=0) %}{% for i in range(3) %}{% set x = i %}{% set ns.n = ns.n + i %}"
               "{% endfor %}{{ x }} {{ ns.n }}"),
            "1 3");
}

TEST(ChatTemplate, SetAndMacros) {
  EXPECT_EQ(ok("{% set a, b = 1, 2 %}{{ a }}{{ b }}{% set t %}x{{ a }}{% endset %}[{{ t }}]"), "12[x1]");
  EXPECT_EQ(ok("{% macro greet(name, punct='!') %}Hi {{ name }}{{ punct }}{% endmacro %}{{ greet('A') }} {{ greet('B', punct='?') }}"),
            "Hi A! Hi B?");
  EXPECT_EQ(ok("{% macro fact(n) %}{% if n <= 1 %}1{% else %}{{ n }}*{{ fact(n - 1) }}{% endif %}{% endmacro %}{{ fact(4) }}"),
            "4*3*2*1");
  EXPECT_EQ(ok("{% macro wrap() %}<{{ caller() }}>{% endmacro %}{% call wrap() %}in{% endcall %}"), "<in>");
  EXPECT_EQ(ok("{{ dict(a=1, b='x') }} {{ namespace(v=[1]).v }}"), "{'a': 1, 'b': 'x'} [1]");
  EXPECT_EQ(ok("{% generation %}g{% endgeneration %}"), "g");
}

// A macro held the scope that defined it, which held the macro: every
// render that defined one leaked its scopes (issue 27).
TEST(ChatTemplate, RendersLeaveNoScopesBehind) {
  const int64_t before = jinja::Scope::live.load();
  ok("{% macro fact(n) %}{% if n <= 1 %}1{% else %}{{ n }}*{{ fact(n - 1) }}{% endif %}{% endmacro %}{{ fact(4) }}");
  ok("{% for i in range(2) %}{% macro m() %}{{ i }}{% endmacro %}{{ m() }}{% endfor %}");
  ok("{% macro wrap() %}<{{ caller() }}>{% endmacro %}{% call wrap() %}in{% endcall %}");
  EXPECT_EQ(jinja::Scope::live.load(), before);
  // A macro kept past the block that defined it is an error, not a dangling scope.
  EXPECT_NE(err("{% set ns = namespace(f=none) %}{% for i in range(1) %}{% macro m() %}x{% endmacro %}"
                "{% set ns.f = m %}{% endfor %}{{ ns.f() }}")
                .find("after the block that defined it ended"),
            std::string::npos);
  EXPECT_EQ(jinja::Scope::live.load(), before);
}

TEST(ChatTemplate, Globals) {
  EXPECT_NE(err("{{ raise_exception('Bad role: ' ~ 'x') }}").find("Bad role: x"), std::string::npos);
  ChatTemplate t = *ChatTemplate::parse("{{ strftime_now('%Y-%m-%d %d %b') }}");
  t.set_fixed_time(1753488000);
  EXPECT_EQ(*t.render(Json::object()), "2025-07-26 26 Jul");
  EXPECT_EQ(ok("{{ range(3)|list }} {{ range(1, 7, 2)|list }} {{ range(3, 0, -1)|list }}"), "[0, 1, 2] [1, 3, 5] [3, 2, 1]");
  EXPECT_NE(err("{{ range(1000000)|list }}").find("Range too big"), std::string::npos);
}

TEST(ChatTemplate, ErrorsCarryLineAndColumn) {
  std::string e = err("line one\n{% if %}");
  EXPECT_NE(e.find("t: line 2, column 7"), std::string::npos) << e;
  e = err("a\nb {{ 1 + }}");
  EXPECT_NE(e.find("line 2"), std::string::npos) << e;
  e = err("{% for x in y %}");
  EXPECT_NE(e.find("endfor"), std::string::npos) << e;
  e = err("\n\n   {{ [1] + 'a' }}");
  EXPECT_NE(e.find("line 3, column"), std::string::npos) << e;
  EXPECT_NE(e.find("can only concatenate list"), std::string::npos) << e;
  EXPECT_FALSE(err("{{ 'unterminated }}").empty());
  EXPECT_FALSE(err("{# no end").empty());
  EXPECT_FALSE(err("{{ (1 }}").empty());
  EXPECT_FALSE(err("{% break %}").empty());
  EXPECT_FALSE(err("{% endif %}").empty());
}

TEST(ChatTemplate, FileAccessIsRejected) {
  for (const char* src : {"{% include 'x.jinja' %}", "{% import 'm' as m %}", "{% extends 'base' %}",
                          "{% from 'x' import y %}"}) {
    EXPECT_NE(err(src).find("cannot load other templates"), std::string::npos) << src;
  }
}

TEST(ChatTemplate, LimitsStopHostileTemplates) {
  ChatTemplateLimits limits;
  limits.max_loop_iterations = 10000;
  limits.max_output_bytes = 1 << 20;
  EXPECT_NE(err("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}", Json::object(), limits)
                .find("loop iterations"),
            std::string::npos);
  EXPECT_NE(err("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}").find("deep"), std::string::npos);
  // Without the call limit, the evaluation depth limit still ends it before the stack does.
  ChatTemplateLimits unbounded_calls;
  unbounded_calls.max_call_depth = 1 << 30;
  EXPECT_NE(err("{% macro f(n) %}{% if true %}{% for i in [1] %}{{ f(n + 1) }}{% endfor %}{% endif %}{% endmacro %}{{ f(0) }}",
                Json::object(), unbounded_calls)
                .find("deep"),
            std::string::npos);
  EXPECT_NE(err("{% set ns = namespace(s='xxxxxxxx') %}{% for i in range(64) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}",
                Json::object(), limits)
                .find("limit"),
            std::string::npos);
  EXPECT_NE(err("{{ 'x' * 100000000000 }}", Json::object(), limits).find("limit"), std::string::npos);
  EXPECT_NE(err("{% for i in range(100) %}{{ 'y' * 100000 }}{% endfor %}", Json::object(), limits).find("limit"),
            std::string::npos);
  // Filters whose output is sized by an argument (issue 27: center took 11 GB,
  // tojson's indent 9 GB, batch's fill without bound) meet the limits while
  // they build it, not when it is emitted (`set` emits nothing).
  for (const char* filter : {"'a'|center(2000000)", "[[1]]|tojson(indent=2000000)", "'a\nb'|indent(2000000)",
                             "range(3)|batch(20000, 'x')", "[1]|batch(9223372036854775807, 0)"}) {
    const std::string message = err(std::string("{% set x = ") + filter + " %}", Json::object(), limits);
    EXPECT_TRUE(message.find("limit") != std::string::npos || message.find("loop iterations") != std::string::npos)
        << filter << ": " << message;
  }
  EXPECT_EQ(ok("{{ 'a'|center(5) }}|{{ [[1]]|tojson(indent=2) }}|{{ range(5)|batch(2, 0)|list }}"),
            "  a  |[\n  [\n    1\n  ]\n]|[[0, 1], [2, 3], [4, 0]]");
  // Python: round(1.5, 2147483647) == 1.5, round(1.5, -2147483647) == 0.0 (was "nan").
  EXPECT_EQ(ok("{{ 1.5|round(2147483647) }} {{ 1.5|round(-2147483647) }}"), "1.5 0.0");
  // Python rounds the double's exact value, ties to even: round(2.675, 2) == 2.67,
  // round(0.125, 2) == 0.12, round(2.5, 0) == 2.0 (jinja2 renders these).
  EXPECT_EQ(ok("{{ 2.675|round(2) }} {{ 0.125|round(2) }} {{ 2.5|round }} {{ 3.5|round }} {{ 1234.5678|round(-2) }}"),
            "2.67 0.12 2.0 4.0 1200.0");
  // Deep nesting in the source is a parse error, not a stack overflow.
  EXPECT_FALSE(err("{{ " + std::string(5000, '(') + "1" + std::string(5000, ')') + " }}").empty());
  std::string chain = "{{ 1";
  for (int i = 0; i < 100000; ++i) chain += "+1";
  EXPECT_FALSE(err(chain + " }}").empty());
  std::string ifs;
  for (int i = 0; i < 5000; ++i) ifs += "{% if true %}";
  EXPECT_FALSE(err(ifs).empty());
}

TEST(ChatTemplate, ApplyChatTemplate) {
  ChatTemplate t = *ChatTemplate::parse(chatml_template_source(), "chatml");
  Json messages = Json::parse(R"([{"role": "system", "content": "S"}, {"role": "user", "content": "Hi", "name": null}])");
  ChatTemplateOptions o;
  EXPECT_EQ(*apply_chat_template(t, messages, o),
            "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
  o.add_generation_prompt = false;
  EXPECT_EQ(*apply_chat_template(t, Json::array(), o), "");
  // Null fields are dropped and reasoning is aliased, as transformers does;
  // a null content stays, which templates test with `is none`.
  ChatTemplate keys = *ChatTemplate::parse("{% for m in messages %}{{ m|list }}{{ m.name is defined }}{% endfor %}");
  Json m = Json::parse(R"([{"role": "assistant", "content": "c", "name": null, "reasoning_content": "r"}])");
  EXPECT_EQ(*apply_chat_template(keys, m, o), "['thinking', 'role', 'content', 'reasoning_content']False");
  ChatTemplate none = *ChatTemplate::parse("{% for m in messages %}{{ m.content is none }}{% endfor %}");
  EXPECT_EQ(*apply_chat_template(none, Json::parse(R"([{"role": "assistant", "content": null}])"), o), "True");
  o.extra = {{"enable_thinking", false}};
  ChatTemplate extra = *ChatTemplate::parse("{{ enable_thinking }} {{ bos_token }}|{{ tools }}");
  o.bos_token = "<s>";
  EXPECT_EQ(*apply_chat_template(extra, Json::array(), o), "False <s>|None");
}

TEST(ChatTemplateSource, SelectsAndResolves) {
  Json list = Json::parse(R"([{"name": "default", "template": "D"}, {"name": "tool_use", "template": "T"}])");
  EXPECT_EQ(*select_chat_template(list, ""), "D");
  EXPECT_EQ(*select_chat_template(list, "tool_use"), "T");
  EXPECT_FALSE(select_chat_template(list, "rag").ok());
  EXPECT_EQ(*select_chat_template(Json("S"), ""), "S");

  std::string dir = test::temp_dir() + "/model";
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/tokenizer_config.json")
      << R"({"bos_token": {"__type": "AddedToken", "content": "<s>"}, "eos_token": "</s>", "chat_template": "CFG"})";
  ChatTemplateRequest req;
  req.model_dir = dir;
  auto r = resolve_chat_template(req);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->source, "CFG");
  EXPECT_EQ(r->bos_token, "<s>");
  EXPECT_EQ(r->eos_token, "</s>");
  std::ofstream(dir + "/chat_template.jinja") << "FILE";
  EXPECT_EQ(resolve_chat_template(req)->source, "FILE");
  req.override_template = "chatml";
  EXPECT_EQ(resolve_chat_template(req)->source, std::string(chatml_template_source()));

  ChatTemplateRequest none;
  auto missing = resolve_chat_template(none);
  EXPECT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("no chat template"), std::string::npos);
  none.gguf_template = "G";
  EXPECT_EQ(resolve_chat_template(none)->source, "G");
}

}  // namespace
}  // namespace zl
