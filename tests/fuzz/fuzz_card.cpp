// Fuzz target: a result file read back, as `ze-probe report` and `gate-repeat-merge` read one:
// bytes = the file, through loadResult (readJsonFile: a regular file, bounded size and nesting;
// a step.json by its keys; checkCardRead / checkStepRead: the schema of the file's version).
//
// Properties: only InputError escapes, and every message starts with the file's path; what the
// check accepts is what the readers after it can use without an error: a card draws
// (cardsReportHtml, cardsReportSvg), a card of schema 3 goes through the gate-repeat table
// (summarizeRepeats, formatRunVerdicts: what gate-repeat-merge does with it), a step.json draws
// with the report's step section. A json::exception from any of them means the schema lets
// through a card its readers cannot read (ze-probe would say "internal error", or name a value it
// "cannot draw", after the check said the card was whole).
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "fuzz_support.hpp"
#include "report_cards.hpp"
#include "result_schemas.hpp"
#include "zp/probe/gate_repeat.hpp"
#include "zp/probe/input_error.hpp"

using namespace zp;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static zp::fuzz::MemFile mem;
    const std::string& path = mem.write(std::span<const std::uint8_t>(data, size));
    app::LoadedResult r;
    try {
        r = app::loadResult(path);
    } catch (const probe::InputError& e) {
        ZP_FUZZ_CHECK(std::string(e.what()).rfind(path + ": ", 0) == 0,
                      std::string("error without the file name: ") + e.what());
        return 0;
    }
    if (r.step) {
        (void)app::cardsReportHtml({}, {}, {}, r.card.card);
        (void)app::cardsReportSvg({}, r.card.card);
        return 0;
    }
    const nlohmann::json& card = r.card.card;
    ZP_FUZZ_CHECK(card.is_object() && card["schema"].is_number_integer(), "an accepted card without its schema");
    ZP_FUZZ_CHECK(r.card.label.rfind("card" + card["card"].dump() + " · ", 0) == 0, "label " + r.card.label);
    (void)app::cardsReportHtml({r.card});
    (void)app::cardsReportSvg({r.card});
    if (card["schema"] == app::kCardSchemaVersion) {
        const probe::RepeatSummary s = probe::summarizeRepeats({card, card});
        ZP_FUZZ_CHECK(s.runs == 2 && !s.contradiction, "one card twice contradicts itself");
        (void)probe::formatRepeatTable(s);
        (void)probe::repeatJson(s).dump();
        (void)probe::formatRunVerdicts(card);
    }
    return 0;
}
