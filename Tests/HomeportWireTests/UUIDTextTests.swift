import Foundation
import Testing

@testable import HomeportWire

@Suite("A UUID's canonical spelling: 36 bytes, hyphens in their four places, hex digits elsewhere")
struct UUIDTextTests {
    /// The rule as the type states it, written plainly: the reference the fast reader must match.
    private static func reference(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        guard bytes.count == 36 else { return false }
        return bytes.indices.allSatisfy { position in
            [8, 13, 18, 23].contains(position)
                ? bytes[position] == UInt8(ascii: "-")
                : "0123456789abcdefABCDEF".utf8.contains(bytes[position])
        }
    }

    @Test("Each place of a UUID changed to each kind of byte is judged as the rule says")
    func everyPlaceEveryByte() {
        let uuid = "0f1c2b7e-9a3d-4e5f-8a6b-7c8d9e0fa1b2"
        #expect(UUIDText.isCanonical(uuid))
        #expect(UUIDText.isCanonical(uuid.uppercased()))
        // Every ASCII byte (a byte next to a digit or letter range among them), and beyond it.
        let replacements = (0..<128).map { String(UnicodeScalar(UInt8($0))) } + ["é", "😀", ""]
        var checked = 0
        for position in 0..<uuid.utf8.count {
            for replacement in replacements {
                var bytes = Array(uuid.utf8)
                bytes.replaceSubrange(position...position, with: Array(replacement.utf8))
                let text = String(decoding: bytes, as: UTF8.self)
                #expect(UUIDText.isCanonical(text) == Self.reference(text), "\(text.debugDescription)")
                checked += 1
            }
        }
        #expect(checked == 36 * replacements.count)
        // Two places as one two-byte letter: 36 bytes still, one of them not ASCII.
        for position in 0..<35 {
            var bytes = Array(uuid.utf8)
            bytes.replaceSubrange(position...(position + 1), with: Array("é".utf8))
            let text = String(decoding: bytes, as: UTF8.self)
            #expect(text.utf8.count == 36 && !UUIDText.isCanonical(text), "\(text.debugDescription)")
        }
    }

    @Test("Too short, too long, signs and spaces before a group, and Foundation's spellings")
    func lengthsAndNeighbours() {
        let uuid = UUID().uuidString
        for text in [
            "", String(uuid.dropLast()), uuid + "0", uuid + "\u{0}", "+" + uuid.dropFirst(),
            " " + uuid.dropFirst(), "0x" + uuid.dropFirst(2), uuid.lowercased(), uuid,
            String(repeating: "-", count: 36), String(repeating: "a", count: 36),
            // 36 bytes, fewer characters: bytes are counted, not characters.
            "é" + uuid.dropFirst(2),
        ] {
            #expect(UUIDText.isCanonical(text) == Self.reference(text), "\(text.debugDescription)")
        }
        #expect(UUIDText.isCanonical(uuid))
        #expect(!UUIDText.isCanonical("+" + uuid.dropFirst()))
    }
}
