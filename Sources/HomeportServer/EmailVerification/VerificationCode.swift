import HomeportCrypto

/// The short codes mailed to verify an address: eight letters in two groups (`BCDF-GHJK`), from
/// django-allauth's alphabet of 20 consonants that no font confuses (about 34 bits). Three tries
/// per verification make guessing hopeless.
enum VerificationCode {
    /// The letters a code is made of.
    static let alphabet = Array("BCDFGHJKLMNPQRSTVWXZ")

    /// A new code, as it is mailed.
    static func generate(_ random: any RandomSource) throws -> String {
        var letters: [Character] = []
        while letters.count < 8 {
            // Rejection sampling: 240 is the largest multiple of 20 below 256, so every letter is as likely.
            for byte in try random.bytes(16) where byte < 240 && letters.count < 8 {
                letters.append(alphabet[Int(byte) % alphabet.count])
            }
        }
        return String(letters[0..<4]) + "-" + String(letters[4...])
    }

    /// The code as a person may type it, made comparable as django-allauth does: without
    /// punctuation and white space, in one case (`bcdf ghjk` is `BCDF-GHJK`). Only ASCII letters
    /// and digits count, so no other letter (`ß`, a full-width `Ｂ`) stands in for a code's.
    static func normalized(_ typed: String) -> String {
        String(
            String.UnicodeScalarView(
                typed.unicodeScalars.filter {
                    $0.isASCII && ($0.properties.isAlphabetic || $0.properties.numericType != nil)
                })
        ).uppercased()
    }

    /// What is stored for a code mailed for the pre-login session `keyHash`: bound to that
    /// session, so that a code read from the table works nowhere else.
    static func storedForm(_ code: String, session keyHash: String) -> String {
        Digest.sha256Hex(keyHash + ":" + normalized(code))
    }
}
