extension GatewayPushBatch {
    /// The batch as JSON, the bytes `JSONEncoder` writes with `.sortedKeys` and
    /// `.withoutEscapingSlashes`, without it: a server sends up to a thousand pushes a request.
    package func json() -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(64 + pushes.reduce(0) { $0 + 256 + $1.payload.utf8.count })
        bytes.append(contentsOf: #"{"pushes":["#.utf8)
        // A notification fans out as one payload to each device (JSON in a string, an escape
        // every few bytes): one the same as the push before's is copied as it was escaped.
        var last: (payload: String, escaped: [UInt8]) = ("", [])
        for (index, push) in pushes.enumerated() {
            if index > 0 { bytes.append(UInt8(ascii: ",")) }
            if last.escaped.isEmpty || !JSONText.sameBytes(push.payload, last.payload) {
                last.payload = push.payload
                last.escaped.removeAll(keepingCapacity: true)
                JSONText.append(push.payload, to: &last.escaped)
            }
            push.write(to: &bytes, escapedPayload: last.escaped)
        }
        bytes.append(contentsOf: "]}".utf8)
        return bytes
    }
}

extension GatewayPush {
    /// One push of ``GatewayPushBatch/json()``, its keys in order, with its payload already
    /// written as a JSON string.
    func write(to bytes: inout [UInt8], escapedPayload: [UInt8]) {
        bytes.append(contentsOf: #"{"apnsId":"#.utf8)
        JSONText.append(apnsId, to: &bytes)
        if let collapseId {
            bytes.append(contentsOf: #","collapseId":"#.utf8)
            JSONText.append(collapseId, to: &bytes)
        }
        bytes.append(contentsOf: #","deviceToken":"#.utf8)
        JSONText.append(deviceToken, to: &bytes)
        bytes.append(contentsOf: #","environment":"#.utf8)
        JSONText.append(environment.rawValue, to: &bytes)
        bytes.append(contentsOf: #","expiration":"#.utf8)
        JSONText.append(expiration, to: &bytes)
        bytes.append(contentsOf: #","payload":"#.utf8)
        bytes.append(contentsOf: escapedPayload)
        bytes.append(contentsOf: #","priority":"#.utf8)
        JSONText.append(priority, to: &bytes)
        bytes.append(contentsOf: #","provider":"#.utf8)
        JSONText.append(provider.rawValue, to: &bytes)
        bytes.append(contentsOf: #","topic":"#.utf8)
        JSONText.append(topic, to: &bytes)
        bytes.append(UInt8(ascii: "}"))
    }
}

extension GatewayPushResults {
    /// The answer as JSON, the bytes `JSONEncoder` writes with `.sortedKeys` and
    /// `.withoutEscapingSlashes`, without it: one outcome for each of up to a thousand pushes.
    package func json() -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(16 + results.count * 24)
        bytes.append(contentsOf: #"{"results":["#.utf8)
        for (index, outcome) in results.enumerated() {
            if index > 0 { bytes.append(UInt8(ascii: ",")) }
            // Its keys in order: reason, retryAfter, status, timestamp.
            bytes.append(UInt8(ascii: "{"))
            if let reason = outcome.reason {
                bytes.append(contentsOf: #""reason":"#.utf8)
                JSONText.append(reason, to: &bytes)
                bytes.append(UInt8(ascii: ","))
            }
            if let retryAfter = outcome.retryAfter {
                bytes.append(contentsOf: #""retryAfter":"#.utf8)
                JSONText.append(retryAfter, to: &bytes)
                bytes.append(UInt8(ascii: ","))
            }
            bytes.append(contentsOf: #""status":"#.utf8)
            JSONText.append(outcome.status, to: &bytes)
            if let timestamp = outcome.timestamp {
                bytes.append(contentsOf: #","timestamp":"#.utf8)
                JSONText.append(timestamp, to: &bytes)
            }
            bytes.append(UInt8(ascii: "}"))
        }
        bytes.append(contentsOf: "]}".utf8)
        return bytes
    }
}
