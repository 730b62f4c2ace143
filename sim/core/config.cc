// config.cc -- parsing of timing.conf and of --config overrides.
#include "config.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

namespace prosper::sim {

extern const char kDefaultTimingConf[];  // generated from sim/config/timing.conf
extern const Profile kProfiles[];        // generated from sim/config/NAME.conf; ends with {nullptr, nullptr}

Config::Config() { apply(kDefaultTimingConf, "timing.conf", true); }

static std::string trim(const std::string &s)
{
	size_t a = s.find_first_not_of(" \t\r"), b = s.find_last_not_of(" \t\r");
	return a == std::string::npos ? "" : s.substr(a, b - a + 1);
}

void Config::apply(const std::string &text, const std::string &name, bool declare)
{
	std::istringstream in(text);
	std::string line;
	for (int n = 1; std::getline(in, line); n++) {
		auto where = [&] { return name + ":" + std::to_string(n) + ": "; };
		line = trim(line.substr(0, line.find('#')));
		if (line.empty())
			continue;
		size_t eq = line.find('=');
		if (eq == std::string::npos)
			throw ConfigError(where() + "expected `key = value`");
		std::string key = trim(line.substr(0, eq)), val = trim(line.substr(eq + 1));
		if (key.empty() || val.empty())
			throw ConfigError(where() + "expected `key = value`");
		if (!declare && !values_.count(key))
			throw ConfigError(where() + "unknown key \"" + key + "\"");
		char *end = nullptr;
		errno = 0;
		double v = std::strtod(val.c_str(), &end);
		if (*end || errno || !std::isfinite(v))
			throw ConfigError(where() + "\"" + val + "\" is not a number");
		if (v < 0)
			throw ConfigError(where() + key + " must not be negative");
		values_[key] = v;
	}
}

void Config::load(const std::string &path)
{
	std::ifstream f(path);
	if (!f)
		throw ConfigError(path + ": cannot open: " + std::strerror(errno));
	std::stringstream ss;
	ss << f.rdbuf();
	apply(ss.str(), path);
}

void Config::use_profile(const std::string &name)
{
	if (name == kBaseProfile)
		return;
	for (const Profile *p = kProfiles; p->name; p++)
		if (name == p->name) {
			apply(p->text, name + ".conf");
			return;
		}
	std::string known;
	for (auto &n : profile_names())
		known += (known.empty() ? "" : ", ") + n;
	throw ConfigError("unknown profile \"" + name + "\" (known: " + known + ")");
}

std::vector<std::string> Config::profile_names()
{
	std::vector<std::string> names{kBaseProfile};
	for (const Profile *p = kProfiles; p->name; p++)
		names.push_back(p->name);
	return names;
}

double Config::get(const std::string &key) const
{
	auto it = values_.find(key);
	if (it == values_.end())
		throw ConfigError("timing.conf: missing key \"" + key + "\"");
	return it->second;
}

}  // namespace prosper::sim
