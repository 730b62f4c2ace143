// document.cpp -- wrapping a class that is not a container (docs/asl.md): a text document whose
// edits survive crashes.  Run it twice with the same directory: the second run continues the
// text of the first.
//
// usage: asl_document DIR [TEXT...]   appends each TEXT as a line, prints the document
#include <cstdio>
#include <string>
#include <string_view>
#include "prosper/asl.hpp"

namespace asl = prosper::asl;

class Document : public asl::PersistentObject {
public:
	// Update methods: bracketed by op_begin/op_commit, listed once below.
	void insert(size_t pos, std::string_view s)
	{
		op_begin<&Document::insert>(pos, s);
		text_.insert(std::min(pos, text_.size()), s.data(), s.size());
		edits_++;
		op_commit();
	}
	void erase(size_t pos, size_t n)
	{
		op_begin<&Document::erase>(pos, n);
		if (pos < text_.size())
			text_.erase(pos, n);
		edits_++;
		op_commit();
	}
	void append_line(std::string_view s)
	{
		op_begin<&Document::append_line>(s);
		insert(text_.size(), s); // nested update: logged once, as append_line
		insert(text_.size(), "\n");
		op_commit();
	}
	PROSPER_ASL_UPDATES(&Document::insert, &Document::erase, &Document::append_line);

	// Read-only methods: untouched.
	std::string_view text() const { return text_; }
	unsigned long edits() const { return edits_; }

private:
	asl::pstring text_;        // a std::string whose characters live in the runtime's heap
	unsigned long edits_ = 0;
};

int main(int argc, char **argv)
{
	if (argc < 2) {
		std::fprintf(stderr, "usage: %s DIR [TEXT...]\n", argv[0]);
		return 2;
	}
	try {
		auto rt = asl::open(argv[1]);
		auto &doc = rt->get_object<Document>("doc");
		for (int i = 2; i < argc; i++)
			doc.append_line(argv[i]);
		std::printf("%.*s(%lu edits; recovered from snapshot %llu, %llu operations replayed)\n",
			    static_cast<int>(doc.text().size()), doc.text().data(), doc.edits(),
			    (unsigned long long)rt->recovery().snapshot_seq, (unsigned long long)rt->recovery().replayed);
	} catch (const std::exception &e) {
		std::fprintf(stderr, "%s\n", e.what());
		return 1;
	}
	return 0;
}
