extension GatewayPushBatch {
    /// The batch read from `bytes` without `JSONDecoder` (up to a thousand pushes a request reach
    /// the gateway), or `nil` when anything in it is not what such a batch holds: a key it does
    /// not know or names twice, a value of another type, a number with a fraction. Whoever gets
    /// `nil` reads the bytes with `JSONDecoder`, which decides and says why; what this accepts,
    /// `JSONDecoder` reads the same.
    package init?(reading bytes: [UInt8]) {
        var memos = GatewayPush.Memos()
        guard let pushes = JSONCursor.list(in: bytes, under: "pushes", { GatewayPush(reading: &$0, memos: &memos) })
        else { return nil }
        self.init(pushes: pushes)
    }
}

extension GatewayPush {
    private static let fields: [CodingKeys] = [
        .provider, .apnsId, .deviceToken, .environment, .topic, .payload, .priority, .expiration, .collapseId,
    ]
    private static let keys = JSONCursor.Keys(fields.map(\.stringValue))

    /// The strings a batch's pushes mostly share, each read once (``JSONCursor/Memo``).
    struct Memos {
        var topic = JSONCursor.Memo()
        var payload = JSONCursor.Memo()
    }

    /// One push of ``GatewayPushBatch/init(reading:)``.
    init?(reading cursor: inout JSONCursor, memos: inout Memos) {
        var provider: PushProvider?
        var apnsId: String?
        var deviceToken: String?
        var environment: PushEnvironment?
        var topic: String?
        var payload: String?
        var priority: Int64?
        var expiration: Int64?
        var collapseId: String?
        // Each value is read whole or the reading ends: a value of another type is `nil`.
        let read: Void? = cursor.object(Self.keys) { cursor, key in
            switch Self.fields[key] {
            case .provider: JSONCursor.fill(&provider, cursor.string().flatMap(PushProvider.init(rawValue:)))
            case .apnsId: JSONCursor.fill(&apnsId, cursor.string())
            case .deviceToken: JSONCursor.fill(&deviceToken, cursor.string())
            case .environment: JSONCursor.fill(&environment, cursor.string().flatMap(PushEnvironment.init(rawValue:)))
            case .topic: JSONCursor.fill(&topic, cursor.string(remembering: &memos.topic))
            case .payload: JSONCursor.fill(&payload, cursor.string(remembering: &memos.payload))
            case .priority: JSONCursor.fill(&priority, cursor.integer())
            case .expiration: JSONCursor.fill(&expiration, cursor.integer())
            // `decodeIfPresent` reads a null as a collapse id left out.
            case .collapseId: cursor.takeNull() ? () : JSONCursor.fill(&collapseId, cursor.string())
            }
        }
        // Each string moved into the push, not copied (a retain now, a release at the end).
        guard read != nil, let apnsId = consume apnsId, let deviceToken = consume deviceToken, let environment,
            let topic = consume topic, let payload = consume payload,
            let priority = priority.flatMap({ Int(exactly: $0) }), let expiration
        else { return nil }
        self.init(
            provider: provider ?? .apns, apnsId: apnsId, deviceToken: deviceToken, environment: environment,
            topic: topic, payload: payload, priority: priority, expiration: expiration, collapseId: collapseId)
    }
}

extension GatewayPushResults {
    /// The gateway's answer read from `bytes` without `JSONDecoder`, or `nil` when anything in
    /// it is not what the answer holds (then `JSONDecoder` reads it), as
    /// ``GatewayPushBatch/init(reading:)``.
    package init?(reading bytes: [UInt8]) {
        guard let results = JSONCursor.list(in: bytes, under: "results", GatewayPushOutcome.init(reading:))
        else { return nil }
        self.init(results: results)
    }
}

extension GatewayPushOutcome {
    /// The members of an outcome, as its `Codable` conformance names them.
    private enum Field: String, CaseIterable {
        case status, reason, timestamp, retryAfter
    }
    private static let keys = JSONCursor.Keys(Field.allCases.map(\.rawValue))

    /// One outcome of ``GatewayPushResults/init(reading:)``; a `null` is a value left out.
    init?(reading cursor: inout JSONCursor) {
        var status: Int64?
        var reason: String?
        var timestamp: Int64?
        var retryAfter: Int64?
        // Each value is read whole or the reading ends: a value of another type is `nil`.
        let read: Void? = cursor.object(Self.keys) { cursor, key in
            let field = Field.allCases[key]
            if field != .status, cursor.takeNull() { return () }
            switch field {
            case .status: return JSONCursor.fill(&status, cursor.integer())
            case .reason: return JSONCursor.fill(&reason, cursor.string())
            case .timestamp: return JSONCursor.fill(&timestamp, cursor.integer())
            case .retryAfter: return JSONCursor.fill(&retryAfter, cursor.integer())
            }
        }
        guard read != nil, let status = status.flatMap({ Int(exactly: $0) }) else { return nil }
        self.init(status: status, reason: reason, timestamp: timestamp, retryAfter: retryAfter)
    }
}
