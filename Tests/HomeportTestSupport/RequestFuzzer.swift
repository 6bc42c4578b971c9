import Foundation

/// SplitMix64: small, fast and deterministic, so that a failing fuzz run replays from its seed.
public struct SeededGenerator: RandomNumberGenerator, Sendable {
    private var state: UInt64

    /// A generator starting at `seed`.
    public init(seed: UInt64) { state = seed }

    /// The next 64 random bits.
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// The seed and size of a fuzz run: `HOMEPORT_FUZZ_SEED` replays one, `HOMEPORT_FUZZ_REQUESTS`
/// scales it (`scripts/fuzz --requests N`).
public enum FuzzRun {
    /// The seed: from the environment, else a fresh one (printed by the tests on failure).
    public static var seed: UInt64 {
        ProcessInfo.processInfo.environment["HOMEPORT_FUZZ_SEED"].flatMap { UInt64($0) }
            ?? UInt64.random(in: 1...UInt64.max)
    }

    /// How many requests a run sends: `HOMEPORT_FUZZ_REQUESTS`, else `default`.
    public static func requests(default count: Int) -> Int {
        ProcessInfo.processInfo.environment["HOMEPORT_FUZZ_REQUESTS"].flatMap { Int($0) } ?? count
    }
}

/// A well-formed request a fuzzer starts from.
public struct RequestTemplate: Sendable {
    /// The method.
    public var method: String
    /// The target: path and query.
    public var target: String
    /// The header fields (`Host` and framing are added when rendered).
    public var headers: [(name: String, value: String)]
    /// The body.
    public var body: [UInt8]

    /// Creates a template.
    public init(_ method: String, _ target: String, headers: [(name: String, value: String)] = [], body: [UInt8] = []) {
        self.method = method
        self.target = target
        self.headers = headers
        self.body = body
    }

    /// The request's bytes, unmutated: `Host`, `Connection: close` and a `Content-Length` for a body.
    public var bytes: [UInt8] {
        var head = "\(method) \(target) HTTP/1.1\r\nHost: fuzz\r\nConnection: close\r\n"
        for field in headers { head += "\(field.name): \(field.value)\r\n" }
        if !body.isEmpty || method == "POST" || method == "PUT" { head += "Content-Length: \(body.count)\r\n" }
        return Array((head + "\r\n").utf8) + body
    }
}

/// Mutates valid requests the ways a hostile or broken client does: request line, methods,
/// versions, header names and values, `Content-Length` lies, chunked framing, invalid UTF-8,
/// NULs, binary, truncation.
public struct RequestFuzzer {
    /// The random source (seeded).
    public var random: SeededGenerator

    /// A fuzzer drawing from `seed`.
    public init(seed: UInt64) { random = SeededGenerator(seed: seed) }

    /// `template` with one to three mutations.
    public mutating func mutate(_ template: RequestTemplate) -> [UInt8] {
        var request = Parts(template)
        for _ in 0..<Int.random(in: 1...3, using: &random) {
            switch Int.random(in: 0..<12, using: &random) {
            case 0: request.method = pick(Self.methods) ?? bytes(1...12)
            case 1: request.version = pick(Self.versions) ?? bytes(1...10)
            case 2: request.target += mutatedTarget()
            case 3: request.headers.append((bytes(0...20, tokenish: true), bytes(0...200)))
            case 4: duplicateOrDrop(&request)
            case 5: request.framing = .length(lyingLength(request.body.count))
            case 6: request.framing = .chunked(pick(Self.codings) ?? "chunked", broken: Bool.random(using: &random))
            case 7: request.body = mutatedBody(request.body)
            case 8: request.headers.append((pick(Self.names) ?? "X", String(repeating: "a", count: pickSize())))
            case 9: request.truncateAt = Int.random(in: 0...max(0, request.render().count), using: &random)
            case 10: request.flips = Int.random(in: 1...8, using: &random)
            default: request.lineEnd = pick(["\n", "\r", "\r\r\n", "\n\r"]) ?? "\r\n"
            }
        }
        var output = request.render()
        for _ in 0..<request.flips where !output.isEmpty {
            output[Int.random(in: 0..<output.count, using: &random)] = UInt8.random(in: 0...255, using: &random)
        }
        if let cut = request.truncateAt, cut < output.count { output = Array(output.prefix(cut)) }
        return output
    }

    // MARK: Pieces

    private static let methods = [
        "GET", "POST", "PUT", "DELETE", "HEAD", "OPTIONS", "PATCH", "TRACE", "CONNECT", "get", "PRI", "G\u{0}T",
        "GÉT", "",
    ]
    private static let versions = [
        "HTTP/1.1", "HTTP/1.0", "HTTP/0.9", "HTTP/2.0", "HTTP/1.2", "HTTP/9.9", "http/1.1", "HTTP/1", "HTTP/1.1 x", "",
        "HTTP/01.1",
    ]
    private static let codings = [
        "chunked", "Chunked", "gzip", "chunked, gzip", "gzip, chunked", " chunked", "chunked ", "",
    ]
    private static let names = [
        "Host", "Content-Length", "Transfer-Encoding", "Cookie", "X-Session-Token", "Content-Type", "Origin",
        "Expect", "Connection", "Upgrade", "X-Password-Reset-Key",
    ]

    private mutating func pick<T>(_ choices: [T]) -> T? {
        // One draw in five makes something up instead.
        Int.random(in: 0..<5, using: &random) == 0 ? nil : choices.randomElement(using: &random)
    }

    private mutating func pickSize() -> Int {
        [0, 1, 255, 1024, 8192, 17000, 70000].randomElement(using: &random) ?? 1
    }

    /// Random bytes as a string: any byte (NUL, CR, LF, invalid UTF-8), or token-like ones.
    private mutating func bytes(_ count: ClosedRange<Int>, tokenish: Bool = false) -> String {
        let length = Int.random(in: count, using: &random)
        let raw = (0..<length).map { _ -> UInt8 in
            if tokenish && Int.random(in: 0..<4, using: &random) > 0 {
                return UInt8.random(in: 0x61...0x7A, using: &random)
            }
            return UInt8.random(in: 0...255, using: &random)
        }
        // Each byte as the scalar of the same value (Latin-1); rendering writes it back as that byte.
        return String(String.UnicodeScalarView(raw.map { Unicode.Scalar($0) }))
    }

    private mutating func mutatedTarget() -> String {
        switch Int.random(in: 0..<7, using: &random) {
        case 0: return "?" + (0..<Int.random(in: 0...3000, using: &random)).map { "k\($0)=1" }.joined(separator: "&")
        case 1: return String(repeating: "&", count: Int.random(in: 0...20000, using: &random))
        case 2: return "/../..//%2e%2e/%00/%ff%fe"
        case 3: return "\u{0}?a=1"
        case 4: return bytes(1...64)
        case 5: return "#frag?x=%zz%"
        default: return "/" + String(repeating: "a/", count: Int.random(in: 1...2000, using: &random))
        }
    }

    private mutating func lyingLength(_ actual: Int) -> String {
        switch Int.random(in: 0..<8, using: &random) {
        case 0: return String(actual + Int.random(in: 1...100, using: &random))
        case 1: return String(max(0, actual - Int.random(in: 1...10, using: &random)))
        case 2: return "-1"
        case 3: return "abc"
        case 4: return "99999999999999999999999"
        case 5: return "\(actual), \(actual + 1)"
        case 6: return " \(actual) "
        default: return "0x10"
        }
    }

    private mutating func mutatedBody(_ body: [UInt8]) -> [UInt8] {
        switch Int.random(in: 0..<5, using: &random) {
        case 0: return Array(body.prefix(Int.random(in: 0...body.count, using: &random)))
        case 1: return body + Array(bytes(1...64).unicodeScalars.map { UInt8($0.value & 0xFF) })
        case 2:
            return (0..<Int.random(in: 0...4096, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }
        case 3: return [0xEF, 0xBB, 0xBF] + body
        default:
            var flipped = body
            if !flipped.isEmpty { flipped[Int.random(in: 0..<flipped.count, using: &random)] ^= 0x80 }
            return flipped
        }
    }

    private mutating func duplicateOrDrop(_ request: inout Parts) {
        guard !request.headers.isEmpty else { return }
        let index = Int.random(in: 0..<request.headers.count, using: &random)
        switch Int.random(in: 0..<4, using: &random) {
        case 0: request.headers.remove(at: index)
        case 1: request.headers.append(request.headers[index])
        case 2: request.headers[index].name += " "
        default: request.headers[index].value += "\r\n folded"
        }
    }

    /// A request in pieces, rendered after mutation.
    private struct Parts {
        enum Framing {
            case length(String)
            case chunked(String, broken: Bool)
            case none
        }

        var method: String
        var target: String
        var version = "HTTP/1.1"
        var headers: [(name: String, value: String)]
        var body: [UInt8]
        var framing: Framing
        var lineEnd = "\r\n"
        var truncateAt: Int?
        var flips = 0

        init(_ template: RequestTemplate) {
            method = template.method
            target = template.target
            headers = [("Host", "fuzz"), ("Connection", "close")] + template.headers
            body = template.body
            framing =
                template.body.isEmpty && template.method != "POST" && template.method != "PUT"
                ? .none : .length(String(template.body.count))
        }

        func render() -> [UInt8] {
            var head = "\(method) \(target) \(version)\(lineEnd)"
            for field in headers { head += "\(field.name): \(field.value)\(lineEnd)" }
            var payload = body
            switch framing {
            case .none: break
            case .length(let value): head += "Content-Length: \(value)\(lineEnd)"
            case .chunked(let coding, let broken):
                head += "Transfer-Encoding: \(coding)\(lineEnd)"
                let size = broken ? "zz" : String(body.count, radix: 16)
                payload =
                    Array("\(size)\r\n".utf8) + body + Array("\r\n".utf8) + (broken ? [] : Array("0\r\n\r\n".utf8))
            }
            return Array((head + lineEnd).unicodeScalars.map { UInt8($0.value & 0xFF) }) + payload
        }
    }
}

/// Builds JSON bodies for an endpoint from its valid fields: right and wrong types, missing and
/// extra fields, huge strings and numbers, deep nesting, broken text.
public struct JSONFuzzer {
    /// The random source (seeded).
    public var random: SeededGenerator

    /// A fuzzer drawing from `seed`.
    public init(seed: UInt64) { random = SeededGenerator(seed: seed) }

    /// A body derived from `valid` (field name → JSON text of a valid value).
    public mutating func body(from valid: [(name: String, json: String)]) -> [UInt8] {
        switch Int.random(in: 0..<10, using: &random) {
        case 0: return Array(wholeBody().utf8)
        case 1: return Array(object(valid).utf8) + garbageTail()
        default:
            var fields = valid
            for _ in 0..<Int.random(in: 1...3, using: &random) { mutate(&fields) }
            return Array(object(fields).utf8)
        }
    }

    private func object(_ fields: [(name: String, json: String)]) -> String {
        "{" + fields.map { "\(quoted($0.name)):\($0.json)" }.joined(separator: ",") + "}"
    }

    private func quoted(_ text: String) -> String {
        let data =
            (try? JSONSerialization.data(withJSONObject: [text], options: [.fragmentsAllowed])) ?? Data("[\"\"]".utf8)
        return String(String(decoding: data, as: UTF8.self).dropFirst().dropLast())
    }

    private mutating func mutate(_ fields: inout [(name: String, json: String)]) {
        switch Int.random(in: 0..<5, using: &random) {
        case 0 where !fields.isEmpty: fields.remove(at: Int.random(in: 0..<fields.count, using: &random))
        case 1:
            fields.append(
                (["extra", "", "__proto__", "email", "password", "\u{0}"].randomElement(using: &random)!, value()))
        case 2 where !fields.isEmpty: fields.append(fields[Int.random(in: 0..<fields.count, using: &random)])
        default:
            guard !fields.isEmpty else { return }
            fields[Int.random(in: 0..<fields.count, using: &random)].json = value()
        }
    }

    /// A JSON value of any type, or something that almost is one.
    private mutating func value() -> String {
        switch Int.random(in: 0..<16, using: &random) {
        case 0: return "null"
        case 1: return ["true", "false"].randomElement(using: &random)!
        case 2:
            return ["0", "-0", "1e400", "-1e400", "18446744073709551616", "-9223372036854775809", "1.5", "NaN"]
                .randomElement(using: &random)!
        case 3:
            return quoted(
                String(repeating: "a", count: [0, 1, 255, 1025, 70000, 300_000].randomElement(using: &random)!))
        case 4: return "\"\\ud800\""
        case 5: return "\"\\u0000\\u001b[2J\\n\""
        case 6: return "[" + (0..<Int.random(in: 0...50, using: &random)).map { _ in "1" }.joined(separator: ",") + "]"
        case 7: return "{\"a\":{\"b\":[]}}"
        case 8: return nested(Int.random(in: 1...100_000, using: &random))
        case 9: return quoted("ada@example.com\u{0}")
        case 10: return quoted("Ada@Example.COM ")
        case 11:
            return quoted(
                "correct horse battery " + String(repeating: "x", count: Int.random(in: 0...2000, using: &random)))
        case 12: return "\"unterminated"
        case 13: return "'single'"
        case 14:
            return quoted(
                String(decoding: (0..<32).map { _ in UInt8.random(in: 0...255, using: &random) }, as: UTF8.self))
        default: return quoted("ünïcødé ✓ \u{0301}\u{0600}")
        }
    }

    private func nested(_ depth: Int) -> String {
        String(repeating: "[", count: depth) + String(repeating: "]", count: depth)
    }

    private mutating func wholeBody() -> String {
        [
            "", " ", "null", "[]", "\"text\"", "42", "{", "}", "{}", "{\"a\":1,}", nested(600_000), "\u{FEFF}{}",
            "{\"email\":1}{\"email\":2}",
        ]
        .randomElement(using: &random)!
    }

    private mutating func garbageTail() -> [UInt8] {
        (0..<Int.random(in: 1...16, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }
    }
}
