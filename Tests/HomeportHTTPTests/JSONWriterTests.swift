import Foundation
import HomeportHTTP
import HomeportWire
import Testing

@Suite("Answers are written as Foundation's JSONEncoder writes them (sorted keys, slashes as they are)")
struct JSONWriterTests {
    private static let reference: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }()

    private func same<T: Encodable>(_ value: T, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let expected = String(decoding: try Self.reference.encode(value), as: UTF8.self)
        let written = String(decoding: try HTTPResponse.encode(value), as: UTF8.self)
        #expect(written == expected, sourceLocation: sourceLocation)
    }

    @Test("a push payload the server writes is byte for byte the one JSONEncoder writes, under any app-data key")
    func pushPayload() throws {
        let server = InstanceID("6f1c2a3b-0000-4000-8000-000000000001")!
        for key in ["homeport", "officer", "Aaa", "zz", "a/b"] {
            let payload = PushPayload(
                aps: .init(
                    alert: .init(title: "Bö \"shared\"", body: "line\nbreak/slash"), threadID: "\(server):journal:7"),
                appData: PushAppData(
                    s: server, c: "sundown:entry.shared", id: 7, mv: "abc",
                    d: ["entry": "7", "Path": "/journal/7", "é": "ü", "a.b-c_d": ""]))
            let expected = try payload.encoded(appDataKey: key)
            let written = try payload.encoded(appDataKey: key) { try HTTPResponse.encode($0) }
            #expect(String(decoding: written, as: UTF8.self) == String(decoding: expected, as: UTF8.self), "\(key)")
        }
    }

    /// A JSON-shaped value of random shape, encoded through every kind of container.
    indirect enum Tree: Encodable {
        case null, bool(Bool), int(Int64), unsigned(UInt64), double(Double), float(Float), string(String)
        case array([Tree]), object([String: Tree]), data(Data)

        func encode(to encoder: any Encoder) throws {
            var single = encoder.singleValueContainer()
            switch self {
            case .null: try single.encodeNil()
            case .bool(let value): try single.encode(value)
            case .int(let value): try single.encode(value)
            case .unsigned(let value): try single.encode(value)
            case .double(let value): try single.encode(value)
            case .float(let value): try single.encode(value)
            case .string(let value): try single.encode(value)
            case .array(let value): try single.encode(value)
            case .object(let value): try single.encode(value)
            case .data(let value): try single.encode(value)
            }
        }

        static func random(depth: Int, using rng: inout some RandomNumberGenerator) -> Tree {
            let pick = Int.random(in: 0..<(depth > 3 ? 8 : 10), using: &rng)
            switch pick {
            case 0: return .null
            case 1: return .bool(Bool.random(using: &rng))
            case 2: return .int(Int64.random(in: .min ... .max, using: &rng))
            case 3: return .unsigned(UInt64.random(in: 0 ... .max, using: &rng))
            case 4:
                let choices: [Double] = [
                    0, -0.0, 1, 1.5, 0.1, 1e21, 1e-7, 123_456_789_012, 2.5e300, .leastNonzeroMagnitude,
                    Double.random(in: -1e6...1e6, using: &rng), Double(Int.random(in: -1000...1000, using: &rng)),
                ]
                return .double(choices.randomElement(using: &rng) ?? 0)
            case 5: return .float(Float.random(in: -1000...1000, using: &rng))
            case 6: return .string(randomString(using: &rng))
            case 7:
                return .data(
                    Data((0..<Int.random(in: 0...9, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }))
            case 8:
                return .array(
                    (0..<Int.random(in: 0...4, using: &rng)).map { _ in random(depth: depth + 1, using: &rng) })
            default:
                var members: [String: Tree] = [:]
                for _ in 0..<Int.random(in: 0...4, using: &rng) {
                    members[randomString(using: &rng)] = random(depth: depth + 1, using: &rng)
                }
                return .object(members)
            }
        }

        /// The tree as an untyped value, each number at random as Swift's type or an `NSNumber`
        /// (a `Float` as the `Double` its text reads as, which is what JSON holds).
        func untyped(using rng: inout some RandomNumberGenerator) -> Any {
            let boxed = Bool.random(using: &rng)
            switch self {
            case .null: return NSNull()
            case .bool(let value): return boxed ? NSNumber(value: value) : value
            case .int(let value): return boxed ? NSNumber(value: value) : value
            case .unsigned(let value): return boxed ? NSNumber(value: value) : value
            case .double(let value): return boxed ? NSNumber(value: value) : value
            case .float(let value): return Double(value.description) ?? 0
            case .string(let value): return value
            case .data(let value): return value.base64EncodedString()
            case .array(let items): return items.map { $0.untyped(using: &rng) }
            case .object(let members): return members.mapValues { $0.untyped(using: &rng) }
            }
        }

        static func randomString(using rng: inout some RandomNumberGenerator) -> String {
            let pool: [Unicode.Scalar] =
                (0...0x20).compactMap(Unicode.Scalar.init) + [
                    "\"", "\\", "/", "a", "B", "_", "é", "\u{7f}", "\u{2028}", "😀", "z", "0",
                ]
            return String(
                String.UnicodeScalarView(
                    (0..<Int.random(in: 0...8, using: &rng)).map { _ in
                        pool.randomElement(using: &rng) ?? "a"
                    }))
        }
    }

    @Test("the wire types, byte for byte")
    func wireTypes() throws {
        let id = InstanceID(UUID())
        try same(ServerIdentity(product: "bookorbit", instanceId: id))
        try same(AppInfo(product: "p", version: "1.0", features: ["a", "b/c"], instanceId: id))
        try same(AppInfo(product: "p", version: "1.0", features: [], instanceId: nil))
        try same(ErrorEnvelope(code: "invalid_field", message: "A \"title\" is 1–200 characters.\n", field: "title"))
        try same(NotificationCatalogue(version: "abc", codes: [.init(code: "x:y", title: "T")]))
        try same(["books": [["id": "1", "title": "Dune"]]])
        try same(URL(string: "https://example.net/a?b=c")!)
    }

    @Test("every control character, quote, backslash and non-ASCII scalar")
    func strings() throws {
        try same((0..<0x80).map { String(UnicodeScalar(UInt8($0))) }.joined())
        try same(["\u{0}": "\u{1f}", "\u{2028}\u{2029}": "😀é/\\\""])
    }

    @Test("numbers of every width, at their extremes")
    func numbers() throws {
        try same([Int8.min, Int8.max].map(Int64.init))
        try same(Int8.min)
        try same(Int16.max)
        try same(Int32.min)
        try same(UInt.max)
        try same(UInt8.max)
        try same(UInt16.max)
        try same(UInt32.max)
        try same(UInt64.max)
        try same(Int64.min)
        try same([Float(0.1), 1e-7, 3e38, -0.0])
        try same([
            0.1, 1e21, 1e-7, 1.0, -0.0, 123_456_789_012.0, 2.5e300, Double.leastNonzeroMagnitude,
            1.7976931348623157e308,
        ])
    }

    @Test("a non-finite number is refused, as Foundation refuses it")
    func nonFinite() {
        #expect(throws: (any Error).self) { try HTTPResponse.encode([Double.nan]) }
        #expect(throws: (any Error).self) { try HTTPResponse.encode(["x": Double.infinity]) }
    }

    @Test("two thousand values of random shape")
    func randomTrees() throws {
        var rng = SystemRandomNumberGenerator()
        for _ in 0..<2000 {
            let tree = Tree.random(depth: 0, using: &rng)
            try same(tree)
            try same(["wrapped": tree])
        }
    }

    @Test("untyped values (Swift's own or Foundation's NSNumber) are written as JSONEncoder writes the typed ones")
    func untypedTrees() throws {
        var rng = SystemRandomNumberGenerator()
        for _ in 0..<2000 {
            let tree = Tree.random(depth: 0, using: &rng)
            let expected = try Self.reference.encode(["wrapped": tree])
            let written = try HTTPResponse.encode(untyped: ["wrapped": tree.untyped(using: &rng)])
            #expect(String(decoding: written, as: UTF8.self) == String(decoding: expected, as: UTF8.self))
        }
    }

    @Test("an untyped boolean is told by its type, never by its value: NSNumber(1) is 1, not true")
    func untypedBooleans() throws {
        let literal: [Any] = [true, 1, NSNumber(value: Int8(1)), NSNumber(value: true), false, 0, 1.5, UInt64.max]
        #expect(
            String(decoding: try HTTPResponse.encode(untyped: literal), as: UTF8.self)
                == "[true,1,1,true,false,0,1.5,18446744073709551615]")
        let read = try JSONSerialization.jsonObject(with: Data("[true,1,false,0,-7,2.25]".utf8))
        #expect(String(decoding: try HTTPResponse.encode(untyped: read), as: UTF8.self) == "[true,1,false,0,-7,2.25]")
    }

    @Test("an untyped long number, which JSONSerialization on Linux reads as a decimal, keeps its digits")
    func untypedDecimals() throws {
        let text = "[-1234567890123456789,0.30000000000000004,12345678901234567890123,-407445.51781963615,1.5,1e-07]"
        let read = try JSONSerialization.jsonObject(with: Data(text.utf8))
        #expect(String(decoding: try HTTPResponse.encode(untyped: read), as: UTF8.self) == text)
        #expect(String(decoding: try HTTPResponse.encode(untyped: [Float(1.1)]), as: UTF8.self) == "[1.1]")
        #expect(throws: (any Error).self) { try HTTPResponse.encode(untyped: [NSDecimalNumber.notANumber]) }
    }

    @Test("an untyped optional is its value or null; what is not JSON is refused, never written")
    func untypedEdges() throws {
        let object: [String: Any] = ["none": Int?.none as Any, "some": Int?.some(2) as Any, "a/b": NSNull()]
        #expect(
            String(decoding: try HTTPResponse.encode(untyped: object), as: UTF8.self)
                == #"{"a/b":null,"none":null,"some":2}"#)
        #expect(throws: (any Error).self) { try HTTPResponse.encode(untyped: ["when": Date()]) }
        #expect(throws: (any Error).self) { try HTTPResponse.encode(untyped: [1: "a"]) }
        #expect(throws: (any Error).self) { try HTTPResponse.encode(untyped: ["x": [Double.nan]]) }
    }

    @Test("optionals: nil members are left out by encodeIfPresent and null when encoded")
    func optionals() throws {
        struct Members: Encodable {
            var a: Int?
            var b: String?
            var c: [Int?]
            func encode(to encoder: any Encoder) throws {
                var container = encoder.container(keyedBy: CodingKeys.self)
                try container.encodeIfPresent(a, forKey: .a)
                try container.encode(b, forKey: .b)
                try container.encode(c, forKey: .c)
            }
            enum CodingKeys: String, CodingKey { case a, b, c }
        }
        try same(Members(a: nil, b: nil, c: [1, nil]))
        try same(Members(a: 3, b: "x", c: []))
    }
}
