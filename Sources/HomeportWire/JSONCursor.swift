import Foundation

/// A reader over JSON bytes for the few wire types read on a hot path (a push gateway's batch
/// and its answer, up to a thousand records a request), where Foundation's `JSONDecoder` costs
/// several microseconds a record.
///
/// It reads only what it is sure of and says `nil` otherwise: a caller that gets `nil` anywhere
/// reads the whole text again with `JSONDecoder`, which then decides (and words the error). So
/// what it accepts it must read exactly as `JSONDecoder` would: strings with every escape
/// (a lone surrogate or invalid UTF-8 is left to `JSONDecoder`), integers without a fraction or
/// an exponent, JSON's four whitespace bytes between tokens.
package struct JSONCursor {
    private let bytes: [UInt8]
    private var index = 0

    package init(_ bytes: [UInt8]) {
        self.bytes = bytes
    }

    /// Steps over `byte` after any whitespace; `nil` when something else is there.
    package mutating func expect(_ byte: UInt8) -> Void? {
        skipWhitespace()
        guard index < bytes.count, bytes[index] == byte else { return nil }
        index += 1
        return ()
    }

    /// Steps over `byte` after any whitespace when it is there; says whether it was.
    package mutating func take(_ byte: UInt8) -> Bool {
        expect(byte) != nil
    }

    /// Whether only whitespace is left.
    package mutating func atEnd() -> Bool {
        skipWhitespace()
        return index == bytes.count
    }

    /// Steps over `null` when it is next; says whether it was.
    package mutating func takeNull() -> Bool {
        skipWhitespace()
        guard bytes.count - index >= 4, bytes[index] == UInt8(ascii: "n"), bytes[index + 1] == UInt8(ascii: "u"),
            bytes[index + 2] == UInt8(ascii: "l"), bytes[index + 3] == UInt8(ascii: "l")
        else { return false }
        index += 4
        return true
    }

    /// An integer written without a fraction or an exponent, within `Int64`.
    package mutating func integer() -> Int64? {
        skipWhitespace()
        let negative = index < bytes.count && bytes[index] == UInt8(ascii: "-")
        if negative { index += 1 }
        let start = index
        var value: Int64 = 0
        while index < bytes.count, bytes[index] >= UInt8(ascii: "0"), bytes[index] <= UInt8(ascii: "9") {
            let digit = Int64(bytes[index] - UInt8(ascii: "0"))
            // Counted down, so that Int64.min fits.
            let (times, overflowed) = value.multipliedReportingOverflow(by: 10)
            let (next, under) = times.subtractingReportingOverflow(digit)
            guard !overflowed, !under else { return nil }
            value = next
            index += 1
        }
        let digits = index - start
        guard digits > 0, digits == 1 || bytes[start] != UInt8(ascii: "0") else { return nil }
        if index < bytes.count {
            switch bytes[index] {
            case UInt8(ascii: "."), UInt8(ascii: "e"), UInt8(ascii: "E"): return nil
            default: break
            }
        }
        if negative { return value }
        return value == .min ? nil : -value
    }

    /// A string, its escapes decoded.
    package mutating func string() -> String? {
        guard expect(UInt8(ascii: "\"")) != nil else { return nil }
        let start = index
        // Most strings hold no escape: their bytes are the string's.
        var high: UInt8 = 0
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                defer { index += 1 }
                return bytes.withUnsafeBufferPointer {
                    Self.text(UnsafeBufferPointer(rebasing: $0[start..<index]), ascii: high < 0x80)
                }
            }
            if byte == UInt8(ascii: "\\") { break }
            guard byte >= 0x20 else { return nil }
            high |= byte
            index += 1
        }
        // A payload is JSON in a string, an escape every few bytes: the runs between them are
        // copied whole.
        var decoded: [UInt8] = []
        decoded.reserveCapacity(closingQuote(from: index) - start)
        var run = start
        while index < bytes.count {
            let byte = bytes[index]
            guard byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") else {
                guard byte >= 0x20 else { return nil }
                index += 1
                continue
            }
            decoded.append(contentsOf: bytes[run..<index])
            index += 1
            switch byte {
            case UInt8(ascii: "\""): return decoded.withUnsafeBufferPointer { Self.text($0, ascii: false) }
            default:
                guard index < bytes.count else { return nil }
                let escaped = bytes[index]
                index += 1
                if let byte = JSONText.unescaped(escaped) {
                    decoded.append(byte)
                } else if escaped == UInt8(ascii: "u"), let scalar = unicodeEscape() {
                    decoded.append(contentsOf: String(Character(scalar)).utf8)
                } else {
                    return nil
                }
                run = index
            }
        }
        return nil
    }

    /// `bytes` as a string when they are UTF-8, `nil` when not. Bytes known to be ASCII are: they
    /// are read without `String(validating:as:)`, whose generic path looks its types up each call
    /// (a fifth of a gateway's reading of a batch).
    private static func text(_ bytes: UnsafeBufferPointer<UInt8>, ascii: Bool) -> String? {
        ascii ? String(decoding: bytes, as: UTF8.self) : String(validating: bytes, as: UTF8.self)
    }

    /// Whether two runs of bytes are the same bytes.
    private static func same(_ first: UnsafeBufferPointer<UInt8>, _ second: UnsafeBufferPointer<UInt8>) -> Bool {
        guard first.count == second.count else { return false }
        guard let a = first.baseAddress, let b = second.baseAddress else { return true }
        return memcmp(a, b, first.count) == 0
    }

    /// Where the string whose text goes on at `start` ends: its closing quote's place, stepping
    /// over each escape's second byte, or at least the text's length when it has none.
    private func closingQuote(from start: Int) -> Int {
        var end = start
        while end < bytes.count, bytes[end] != UInt8(ascii: "\"") { end += bytes[end] == UInt8(ascii: "\\") ? 2 : 1 }
        return end
    }

    /// The last string read through it: its text as written, escapes and all, and what it reads
    /// as. A batch's pushes mostly carry one notification's payload and one topic: each is read
    /// once, and each repeat is compared byte for byte and shares the first one's storage.
    package struct Memo {
        fileprivate var written: ArraySlice<UInt8>?
        fileprivate var value = ""

        package init() {}
    }

    /// A string as ``string()`` reads it, or `memo`'s when its text is written the same.
    package mutating func string(remembering memo: inout Memo) -> String? {
        skipWhitespace()
        guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { return nil }
        let end = closingQuote(from: index + 1)
        guard end < bytes.count else { return nil }
        let written = bytes[(index + 1)..<end]
        if let known = memo.written,
            known.withUnsafeBufferPointer({ known in written.withUnsafeBufferPointer { Self.same(known, $0) } })
        {
            index = end + 1
            return memo.value
        }
        guard let value = string() else { return nil }
        memo.written = written
        memo.value = value
        return value
    }

    /// The scalar of a `\u` escape whose `\u` is read (a surrogate pair's two escapes); `nil` for
    /// a lone surrogate.
    private mutating func unicodeEscape() -> Unicode.Scalar? {
        guard let first = hex4() else { return nil }
        if (0xD800..<0xDC00).contains(first) {
            guard bytes.count - index >= 6, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u")
            else { return nil }
            index += 2
            guard let second = hex4(), (0xDC00..<0xE000).contains(second) else { return nil }
            return Unicode.Scalar(0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00))
        }
        return Unicode.Scalar(first)
    }

    private mutating func hex4() -> UInt32? {
        guard bytes.count - index >= 4 else { return nil }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[index]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: return nil
            }
            value = value << 4 | UInt32(digit)
            index += 1
        }
        return value
    }

    /// The keys an object may hold (at most 64).
    package struct Keys: Sendable {
        let names: [String]
        let utf8: [[UInt8]]

        package init(_ names: [String]) {
            precondition(names.count <= 64)
            self.names = names
            utf8 = names.map { Array($0.utf8) }
        }
    }

    /// The members of an object, each key's place in `keys` handed to `member`, which reads the
    /// value (`nil` to give up); `nil` for a key not in `keys` or named twice.
    package mutating func object(_ keys: Keys, _ member: (inout JSONCursor, Int) -> Void?) -> Void? {
        guard expect(UInt8(ascii: "{")) != nil else { return nil }
        if take(UInt8(ascii: "}")) { return () }
        var seen: UInt64 = 0
        repeat {
            guard let key = key(keys), seen & (1 << key) == 0, expect(UInt8(ascii: ":")) != nil,
                member(&self, key) != nil
            else { return nil }
            seen |= 1 << key
        } while take(UInt8(ascii: ","))
        return expect(UInt8(ascii: "}"))
    }

    /// A key's place in `keys`: its bytes compared as they are, or (with an escape) decoded.
    private mutating func key(_ keys: Keys) -> Int? {
        skipWhitespace()
        guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { return nil }
        let start = index + 1
        var end = start
        while end < bytes.count, bytes[end] != UInt8(ascii: "\""), bytes[end] != UInt8(ascii: "\\") { end += 1 }
        if end < bytes.count, bytes[end] == UInt8(ascii: "\"") {
            let found = bytes.withUnsafeBufferPointer { buffer in
                let key = UnsafeBufferPointer(rebasing: buffer[start..<end])
                return keys.utf8.firstIndex { name in name.withUnsafeBufferPointer { Self.same($0, key) } }
            }
            index = end + 1
            return found
        }
        return string().flatMap { keys.names.firstIndex(of: $0) }
    }

    /// The items of a text that is one object whose one member, `key`, is an array, each item
    /// read by `item`; `nil` for anything else (another key, a second member, bytes after it).
    package static func list<Item>(in bytes: [UInt8], under key: String, _ item: (inout JSONCursor) -> Item?)
        -> [Item]?
    {
        var cursor = JSONCursor(bytes)
        var items: [Item]?
        guard
            cursor.object(
                Keys([key]),
                { cursor, _ in
                    items = cursor.array(item)
                    return items.map { _ in () }
                }) != nil, cursor.atEnd()
        else { return nil }
        return items
    }

    /// Puts a value just read into `slot`: `()` when there was one, `nil` (the reading ends)
    /// when there was none.
    package static func fill<Value>(_ slot: inout Value?, _ value: Value?) -> Void? {
        slot = value
        return value.map { _ in () }
    }

    /// The items of an array, each read by `item` (`nil` to give up).
    package mutating func array<Item>(_ item: (inout JSONCursor) -> Item?) -> [Item]? {
        guard expect(UInt8(ascii: "[")) != nil else { return nil }
        var items: [Item] = []
        if take(UInt8(ascii: "]")) { return items }
        repeat {
            guard let next = item(&self) else { return nil }
            items.append(next)
        } while take(UInt8(ascii: ","))
        return expect(UInt8(ascii: "]")) == nil ? nil : items
    }

    private mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return
            }
        }
    }
}
