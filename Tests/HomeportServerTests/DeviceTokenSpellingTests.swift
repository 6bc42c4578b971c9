import Foundation
import Testing

@testable import HomeportServer

/// A device token as servers store it and a gateway checks it on every push: lowercase hex, an
/// even count of 16–200 digits.
@Suite("A device token's spelling: lowercase hex, an even count of 16 to 200 digits")
struct DeviceTokenSpellingTests {
    /// The rule written plainly: the reference the fast check must match.
    private static func reference(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        return (16...200).contains(bytes.count) && bytes.count % 2 == 0
            && bytes.allSatisfy { "0123456789abcdef".utf8.contains($0) }
    }

    @Test("each place of a token changed to each ASCII byte, and to letters beyond it, is judged as the rule says")
    func everyPlaceEveryByte() {
        let token = String(repeating: "0123456789abcdef", count: 4)
        #expect(PushCenter.isNormalizedDeviceToken(token))
        let replacements = (0..<128).map { String(UnicodeScalar(UInt8($0))) } + ["é", "😀", "\u{FF10}", ""]
        var checked = 0
        for position in [0, 1, 31, 63] {
            for replacement in replacements {
                var bytes = Array(token.utf8)
                bytes.replaceSubrange(position...position, with: Array(replacement.utf8))
                let text = String(decoding: bytes, as: UTF8.self)
                #expect(PushCenter.isNormalizedDeviceToken(text) == Self.reference(text), "\(text.debugDescription)")
                checked += 1
            }
        }
        #expect(checked == 4 * 132)
        // Two places as one two-byte letter: 64 bytes still, one of them not ASCII.
        for position in [0, 31, 62] {
            var bytes = Array(token.utf8)
            bytes.replaceSubrange(position...(position + 1), with: Array("é".utf8))
            let text = String(decoding: bytes, as: UTF8.self)
            #expect(text.utf8.count == 64 && !PushCenter.isNormalizedDeviceToken(text), "\(text.debugDescription)")
        }
        // Uppercase is another spelling: the normalized form of it is the token.
        #expect(!PushCenter.isNormalizedDeviceToken(token.uppercased()))
        #expect(PushCenter.normalizedDeviceToken(token.uppercased()) == token)
    }

    @Test("too short, too long and odd lengths are refused")
    func lengths() {
        for count in [0, 2, 14, 15, 16, 17, 198, 199, 200, 201, 202, 1000] {
            let text = String(repeating: "a", count: count)
            #expect(PushCenter.isNormalizedDeviceToken(text) == Self.reference(text), "\(count) digits")
        }
    }
}
