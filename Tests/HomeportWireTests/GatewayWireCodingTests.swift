import Foundation
import HomeportWire
import Testing

@Suite("A push gateway's batch and answer, read and written without Foundation's coders: the same values and bytes")
struct GatewayWireCodingTests {
    private static func encoder(pretty: Bool = false) -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = pretty ? [.sortedKeys, .prettyPrinted] : [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }

    private static func randomString(using rng: inout some RandomNumberGenerator) -> String {
        let pool: [Unicode.Scalar] =
            [
                "a", "Z", "0", " ", "\"", "\\", "/", "\u{0}", "\u{1f}", "\n", "\t", "\u{7f}", "é", "\u{2028}", "😀",
                "{", "}", ":", ",", "[",
            ]
        return String(
            String.UnicodeScalarView(
                (0..<Int.random(in: 0...12, using: &rng)).map { _ in pool.randomElement(using: &rng) ?? "a" }))
    }

    private static func randomInteger(using rng: inout some RandomNumberGenerator) -> Int64 {
        [0, 1, -1, 10, .max, .min, Int64.random(in: .min ... .max, using: &rng)].randomElement(using: &rng) ?? 0
    }

    private static func randomBatch(using rng: inout some RandomNumberGenerator) -> GatewayPushBatch {
        GatewayPushBatch(
            pushes: (0..<Int.random(in: 0...4, using: &rng)).map { _ in
                GatewayPush(
                    provider: PushProvider.allCases.randomElement(using: &rng) ?? .apns,
                    apnsId: randomString(using: &rng), deviceToken: randomString(using: &rng),
                    environment: PushEnvironment.allCases.randomElement(using: &rng) ?? .production,
                    topic: randomString(using: &rng), payload: randomString(using: &rng),
                    priority: Int(randomInteger(using: &rng)), expiration: randomInteger(using: &rng),
                    collapseId: Bool.random(using: &rng) ? nil : randomString(using: &rng))
            })
    }

    private static func randomResults(using rng: inout some RandomNumberGenerator) -> GatewayPushResults {
        GatewayPushResults(
            results: (0..<Int.random(in: 0...4, using: &rng)).map { _ in
                GatewayPushOutcome(
                    status: Int(randomInteger(using: &rng)),
                    reason: Bool.random(using: &rng) ? nil : randomString(using: &rng),
                    timestamp: Bool.random(using: &rng) ? nil : randomInteger(using: &rng),
                    retryAfter: Bool.random(using: &rng) ? nil : randomInteger(using: &rng))
            })
    }

    /// `bytes` changed in one place: a byte replaced, removed or added.
    private static func mutated(_ bytes: [UInt8], using rng: inout some RandomNumberGenerator) -> [UInt8] {
        var bytes = bytes
        let interesting = Array(#"{}[]:,"\u0 1.e-nlx"#.utf8) + [0x00, 0x1F, 0x7F, 0xC3, 0xFF]
        let byte = interesting.randomElement(using: &rng) ?? 0
        let at = Int.random(in: 0...max(0, bytes.count - 1), using: &rng)
        switch Int.random(in: 0..<3, using: &rng) {
        case 0 where !bytes.isEmpty: bytes[at] = byte
        case 1 where !bytes.isEmpty: bytes.remove(at: at)
        default: bytes.insert(byte, at: at)
        }
        return bytes
    }

    @Test("every batch a server writes is read, the same as JSONDecoder reads it, compact or with whitespace")
    func batches() throws {
        var rng = SystemRandomNumberGenerator()
        for _ in 0..<1000 {
            let batch = Self.randomBatch(using: &rng)
            for encoder in [Self.encoder(), Self.encoder(pretty: true)] {
                let bytes = Array(try encoder.encode(batch))
                #expect(GatewayPushBatch(reading: bytes) == batch)
                #expect(try JSONDecoder().decode(GatewayPushBatch.self, from: Data(bytes)) == batch)
            }
        }
    }

    @Test(
        "pushes that repeat a payload or a topic, written alike or in another spelling, read as JSONDecoder reads them"
    )
    func repeatedStrings() throws {
        var rng = SystemRandomNumberGenerator()
        for _ in 0..<1000 {
            // Three strings for every payload and topic of a batch: most repeat.
            let pool = (0..<3).map { _ in Self.randomString(using: &rng) }
            var batch = Self.randomBatch(using: &rng)
            for index in batch.pushes.indices {
                batch.pushes[index].payload = pool.randomElement(using: &rng) ?? ""
                batch.pushes[index].topic = pool.randomElement(using: &rng) ?? ""
            }
            let bytes = Array(try Self.encoder().encode(batch))
            #expect(GatewayPushBatch(reading: bytes) == batch)
            #expect(batch.json() == bytes)
            let changed = Self.mutated(bytes, using: &rng)
            if let fast = GatewayPushBatch(reading: changed) {
                #expect(try JSONDecoder().decode(GatewayPushBatch.self, from: Data(changed)) == fast, "\(changed)")
            }
        }
        // One payload in three spellings, then a longer one and a shorter one that start alike.
        let payloads = [
            #"{\"a\":\"é\"}"#, #"{\"a\":\"é\"}"#, #"{\u0022a\":\"\u00e9\"}"#, #"{\"a\":\"é\"} "#, #"{\"a\":\"é"#,
            #"{\"a\":\"é\"}"#,
        ]
        let text =
            #"{"pushes":["#
            + payloads.map {
                #"{"apnsId":"i","deviceToken":"d","environment":"production","topic":"t","payload":"\#($0)","priority":10,"expiration":0}"#
            }.joined(separator: ",") + "]}"
        let read = try #require(GatewayPushBatch(reading: Array(text.utf8)))
        #expect(read == (try JSONDecoder().decode(GatewayPushBatch.self, from: Data(text.utf8))))
        #expect(
            read.pushes.map(\.payload) == [
                #"{"a":"é"}"#, #"{"a":"é"}"#, #"{"a":"é"}"#, #"{"a":"é"} "#, #"{"a":"é"#, #"{"a":"é"}"#,
            ])
        // Written, a payload is copied from the push before only when its bytes are the same:
        // Swift's `==` also holds for `é` precomposed and `e` with its accent, and would send
        // the first spelling for both.
        var written = read
        let spellings = ["{\"a\":\"\u{e9}\"}", "{\"a\":\"e\u{301}\"}", "{\"a\":\"\u{e9}\"}", "", "", "{}"]
        for (index, payload) in spellings.enumerated() { written.pushes[index].payload = payload }
        #expect(spellings[0] == spellings[1])
        #expect(written.json() == Array(try Self.encoder().encode(written)))
    }

    @Test("every answer a gateway writes is read, the same as JSONDecoder reads it")
    func results() throws {
        var rng = SystemRandomNumberGenerator()
        for _ in 0..<1000 {
            let results = Self.randomResults(using: &rng)
            for encoder in [Self.encoder(), Self.encoder(pretty: true)] {
                let bytes = Array(try encoder.encode(results))
                #expect(GatewayPushResults(reading: bytes) == results)
            }
        }
    }

    @Test("batches and answers are written byte for byte as JSONEncoder writes them")
    func written() throws {
        var rng = SystemRandomNumberGenerator()
        for _ in 0..<1000 {
            let batch = Self.randomBatch(using: &rng)
            #expect(batch.json() == Array(try Self.encoder().encode(batch)))
            let results = Self.randomResults(using: &rng)
            #expect(results.json() == Array(try Self.encoder().encode(results)))
        }
    }

    @Test("a text changed anywhere is read as JSONDecoder reads it, or left to JSONDecoder (nil)")
    func mutations() throws {
        var rng = SystemRandomNumberGenerator()
        var read = 0
        for _ in 0..<4000 {
            let batch = Self.randomBatch(using: &rng)
            let bytes = Self.mutated(Array(try Self.encoder().encode(batch)), using: &rng)
            if let fast = GatewayPushBatch(reading: bytes) {
                read += 1
                #expect(try JSONDecoder().decode(GatewayPushBatch.self, from: Data(bytes)) == fast, "\(bytes)")
            }
            let results = Self.mutated(Array(try Self.encoder().encode(Self.randomResults(using: &rng))), using: &rng)
            if let fast = GatewayPushResults(reading: results) {
                read += 1
                #expect(try JSONDecoder().decode(GatewayPushResults.self, from: Data(results)) == fast, "\(results)")
            }
        }
        // About one change in eight still makes a text this reads: the check above ran.
        #expect(read > 400)
    }

    @Test("what is left to JSONDecoder: a key unknown or twice, a fraction, a lone surrogate, bad UTF-8")
    func refusals() throws {
        let push =
            #""apnsId":"a","deviceToken":"b","environment":"sandbox","expiration":0,"payload":"{}","priority":10,"topic":"t""#
        #expect(GatewayPushBatch(reading: Array(#"{"pushes":[{\#(push)}]}"#.utf8))?.pushes.first?.provider == .apns)
        let refused = [
            #"{"pushes":[{\#(push),"extra":1}]}"#,
            #"{"pushes":[{\#(push),"topic":"u"}]}"#,
            #"{"pushes":[{\#(push),"apns\u0049d":"c"}]}"#,
            #"{"pushes":[{\#(push)}],"pushes":[]}"#,
            #"{"pushes":[{\#(push.replacingOccurrences(of: "10", with: "10.0"))}]}"#,
            #"{"pushes":[{\#(push.replacingOccurrences(of: "10", with: "1e1"))}]}"#,
            #"{"pushes":[{\#(push.replacingOccurrences(of: "10", with: "010"))}]}"#,
            #"{"pushes":[{\#(push.replacingOccurrences(of: "\"b\"", with: #""\ud800""#))}]}"#,
            #"{"pushes":[{\#(push),"provider":"apn"}]}"#,
            #"{"pushes":[{\#(push),"expiration":9223372036854775808}]}"#,
            #"{"pushes":[{\#(push)}]} x"#,
            #"{"pushes":[{\#(push)},]}"#,
        ]
        for text in refused { #expect(GatewayPushBatch(reading: Array(text.utf8)) == nil, "\(text)") }
        var invalidUTF8 = Array(#"{"pushes":[{\#(push)}]}"#.utf8)
        invalidUTF8[invalidUTF8.firstIndex(of: UInt8(ascii: "b"))!] = 0xFF
        #expect(GatewayPushBatch(reading: invalidUTF8) == nil)
        // A pair of escapes is one scalar; null is a collapse id left out.
        let pair = #"{"pushes":[{\#(push),"collapseId":null,"provider":"fcm"}]}"#
            .replacingOccurrences(of: "\"{}\"", with: #""\ud83d\ude00\"\/""#)
        let read = try #require(GatewayPushBatch(reading: Array(pair.utf8)))
        #expect(read.pushes.first?.payload == "😀\"/" && read.pushes.first?.collapseId == nil)
        #expect(read == (try JSONDecoder().decode(GatewayPushBatch.self, from: Data(pair.utf8))))
    }
}
