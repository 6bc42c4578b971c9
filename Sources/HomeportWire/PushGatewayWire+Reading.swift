extension GatewayPushBatch {
    private static let keys = JSONCursor.Keys(["pushes"])

    /// The batch read from `bytes` without `JSONDecoder` (up to a thousand pushes a request reach
    /// the gateway), or `nil` when anything in it is not what such a batch holds: a key it does
    /// not know or names twice, a value of another type, a number with a fraction. Whoever gets
    /// `nil` reads the bytes with `JSONDecoder`, which decides and says why; what this accepts,
    /// `JSONDecoder` reads the same.
    package init?(reading bytes: [UInt8]) {
        var cursor = JSONCursor(bytes)
        var pushes: [GatewayPush]?
        guard
            cursor.object(Self.keys) { cursor, _ in
                guard let read = cursor.array(GatewayPush.init(reading:)) else { return nil }
                pushes = read
                return ()
            } != nil, cursor.atEnd(), let pushes
        else { return nil }
        self.init(pushes: pushes)
    }
}

extension GatewayPush {
    private static let keys = JSONCursor.Keys([
        "provider", "apnsId", "deviceToken", "environment", "topic", "payload", "priority", "expiration", "collapseId",
    ])

    /// One push of ``GatewayPushBatch/init(reading:)``.
    init?(reading cursor: inout JSONCursor) {
        var provider = PushProvider.apns
        var apnsId: String?
        var deviceToken: String?
        var environment: PushEnvironment?
        var topic: String?
        var payload: String?
        var priority: Int64?
        var expiration: Int64?
        var collapseId: String?
        let read: Void? = cursor.object(Self.keys) { cursor, key in
            // Each value is read whole or the reading ends: a value of another type is `nil`.
            switch Self.keys.names[key] {
            case "provider":
                guard let value = cursor.string().flatMap(PushProvider.init(rawValue:)) else { return nil }
                provider = value
                return ()
            case "apnsId":
                apnsId = cursor.string()
                return apnsId.map { _ in () }
            case "deviceToken":
                deviceToken = cursor.string()
                return deviceToken.map { _ in () }
            case "environment":
                environment = cursor.string().flatMap(PushEnvironment.init(rawValue:))
                return environment.map { _ in () }
            case "topic":
                topic = cursor.string()
                return topic.map { _ in () }
            case "payload":
                payload = cursor.string()
                return payload.map { _ in () }
            case "priority":
                priority = cursor.integer()
                return priority.map { _ in () }
            case "expiration":
                expiration = cursor.integer()
                return expiration.map { _ in () }
            case "collapseId":
                if cursor.takeNull() { return () }
                collapseId = cursor.string()
                return collapseId.map { _ in () }
            default: return nil
            }
        }
        guard read != nil, let apnsId, let deviceToken, let environment, let topic, let payload,
            let priority = priority.flatMap({ Int(exactly: $0) }), let expiration
        else { return nil }
        self.init(
            provider: provider, apnsId: apnsId, deviceToken: deviceToken, environment: environment, topic: topic,
            payload: payload, priority: priority, expiration: expiration, collapseId: collapseId)
    }
}

extension GatewayPushResults {
    private static let keys = JSONCursor.Keys(["results"])

    /// The gateway's answer read from `bytes` without `JSONDecoder`, or `nil` when anything in
    /// it is not what the answer holds (then `JSONDecoder` reads it), as
    /// ``GatewayPushBatch/init(reading:)``.
    package init?(reading bytes: [UInt8]) {
        var cursor = JSONCursor(bytes)
        var results: [GatewayPushOutcome]?
        guard
            cursor.object(Self.keys) { cursor, _ in
                guard let read = cursor.array(GatewayPushOutcome.init(reading:)) else { return nil }
                results = read
                return ()
            } != nil, cursor.atEnd(), let results
        else { return nil }
        self.init(results: results)
    }
}

extension GatewayPushOutcome {
    private static let keys = JSONCursor.Keys(["status", "reason", "timestamp", "retryAfter"])

    /// One outcome of ``GatewayPushResults/init(reading:)``; a `null` is a value left out.
    init?(reading cursor: inout JSONCursor) {
        var status: Int64?
        var reason: String?
        var timestamp: Int64?
        var retryAfter: Int64?
        let read: Void? = cursor.object(Self.keys) { cursor, key in
            let name = Self.keys.names[key]
            if name != "status", cursor.takeNull() { return () }
            // Each value is read whole or the reading ends: a value of another type is `nil`.
            switch name {
            case "status":
                status = cursor.integer()
                return status.map { _ in () }
            case "reason":
                reason = cursor.string()
                return reason.map { _ in () }
            case "timestamp":
                timestamp = cursor.integer()
                return timestamp.map { _ in () }
            case "retryAfter":
                retryAfter = cursor.integer()
                return retryAfter.map { _ in () }
            default: return nil
            }
        }
        guard read != nil, let status = status.flatMap({ Int(exactly: $0) }) else { return nil }
        self.init(status: status, reason: reason, timestamp: timestamp, retryAfter: retryAfter)
    }
}
