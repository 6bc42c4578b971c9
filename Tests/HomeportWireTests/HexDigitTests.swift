import Testing

@testable import HomeportWire

@Suite("Hex digits told without a branch, against the digits written out")
struct HexDigitTests {
    @Test("Every byte: `either` takes 0-9, a-f and A-F, `lowercase` only 0-9 and a-f")
    func everyByte() {
        let lowercase = Set("0123456789abcdef".utf8)
        let either = lowercase.union("ABCDEF".utf8)
        var taken = (either: 0, lowercase: 0)
        for value in 0...255 {
            let byte = UInt8(value)
            #expect(HexDigit.either(byte) == either.contains(byte), "byte \(byte)")
            #expect(HexDigit.lowercase(byte) == lowercase.contains(byte), "byte \(byte)")
            if HexDigit.either(byte) { taken.either += 1 }
            if HexDigit.lowercase(byte) { taken.lowercase += 1 }
        }
        #expect(taken.either == 22 && taken.lowercase == 16)
    }
}
