// cli.h -- what prosper-sim's two command lines (main.cc, ptmain.cc) share: their prototypes,
// list and number arguments, and the one rule for exit codes (0 ok, 1 failure, 2 usage error or
// refused input: a bad trace, config, mechanism, scheme or argument).
#pragma once
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/config.h"
#include "trace/trace.h"

namespace prosper::sim {

bool is_pagetable_command(int argc, char **argv);  // ptmain.cc
int pagetable_main(int argc, char **argv);         // ptmain.cc
std::string json_escape(const std::string &s);     // main.cc

// "a,b,,c" -> {a, b, c}
inline std::vector<std::string> split_list(const std::string &s)
{
	std::vector<std::string> out;
	std::stringstream ss(s);
	for (std::string t; std::getline(ss, t, ',');)
		if (!t.empty())
			out.push_back(t);
	return out;
}

// The value after the option argv[i] (i moves onto it), or std::invalid_argument.
inline std::string option_value(int argc, char **argv, int &i)
{
	if (i + 1 >= argc)
		throw std::invalid_argument(std::string(argv[i]) + " needs a value");
	return argv[++i];
}

// The value of --interval-ms: a positive number of milliseconds, or std::invalid_argument.
inline double parse_interval_ms(const std::string &v)
{
	char *end;
	double ms = std::strtod(v.c_str(), &end);
	if (v.empty() || *end || !(ms > 0))
		throw std::invalid_argument("--interval-ms takes a positive number");
	return ms;
}

// The timing options both command lines take, applied in this order: the profile, then the file.
struct TimingChoice {
	std::string profile = kBaseProfile, config_path;
	void apply(Config &cfg) const
	{
		cfg.use_profile(profile);
		if (!config_path.empty())
			cfg.load(config_path);
	}
};

// The options both command lines take: --interval-ms, --profile, --config, --json.  `value`
// reads the option's value (option_value); false when `a` is none of them.
template <class Value>
inline bool common_option(const std::string &a, Value value, double &interval_ms, TimingChoice &timing, bool &json)
{
	if (a == "--interval-ms")
		interval_ms = parse_interval_ms(value());
	else if (a == "--profile")
		timing.profile = value();
	else if (a == "--config")
		timing.config_path = value();
	else if (a == "--json")
		json = true;
	else
		return false;
	return true;
}

// Report e on stderr; 2 for refused input, 1 for anything else.
inline int fail(const std::exception &e)
{
	std::fprintf(stderr, "prosper-sim: %s\n", e.what());
	bool refused = dynamic_cast<const trace::TraceError *>(&e) || dynamic_cast<const ConfigError *>(&e) ||
		       dynamic_cast<const std::invalid_argument *>(&e);
	return refused ? 2 : 1;
}

}  // namespace prosper::sim
