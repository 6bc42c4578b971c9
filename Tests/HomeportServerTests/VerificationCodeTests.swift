import HomeportCrypto
import Testing

@testable import HomeportServer

@Suite("Verification codes")
struct VerificationCodeTests {
    @Test("codes are eight letters of the alphabet in two groups, and every letter comes up")
    func shape() throws {
        var seen: Set<Character> = []
        for _ in 0..<200 {
            let code = try VerificationCode.generate(SystemRandom())
            #expect(code.wholeMatch(of: /[BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4}/) != nil, "\(code)")
            seen.formUnion(code.filter { $0 != "-" })
        }
        #expect(seen == Set(VerificationCode.alphabet))
    }

    @Test("case, dashes and spaces do not matter; no other letter stands in for a code's")
    func normalization() {
        let stored = VerificationCode.storedForm("BCDF-GHSS", session: "k")
        for typed in ["BCDF-GHSS", "bcdfghss", " bcdf ghss ", "b-c-d-f-g-h-s-s"] {
            #expect(VerificationCode.storedForm(typed, session: "k") == stored, "\(typed)")
        }
        for lookalike in ["bcdfghß", "ＢＣＤＦＧＨＳＳ", "BCDFGHſS", "BCDF-GHSS\u{0}X"] {
            #expect(VerificationCode.storedForm(lookalike, session: "k") != stored, "\(lookalike)")
        }
        #expect(VerificationCode.storedForm("BCDF-GHSS", session: "other") != stored, "bound to its session")
        #expect(VerificationCode.normalized(" - ").isEmpty)
    }
}
