import Foundation

extension PushPayload {
    /// Reads an FCM message as an Android app receives it, `{"data": {…}, "notification":
    /// {"title", "body"}}`, into the payload an APNs push of the same notification carries: the
    /// data block holds the app data's fields as strings (`s`, `c`, `id`, `mv`, `d` as JSON
    /// text) and `thread`, the namespaced thread id. So the client's `PushRouter` routes it by `s` as it
    /// routes an APNs payload. Throws when it is not such a message (no `data`, no `c`, an `s`
    /// that is not an installation id, an `id` that is not a number, a `d` that is not an
    /// object of strings).
    public init(decodingFCM message: Data) throws {
        struct Message: Decodable {
            var data: [String: String]
            var notification: Notification?
            struct Notification: Decodable {
                var title: String?
                var body: String?
            }
        }
        let decoded = try JSONDecoder().decode(Message.self, from: message)
        let data = decoded.data
        func corrupted(_ field: String, _ what: String) -> DecodingError {
            .dataCorrupted(.init(codingPath: [FieldKey("data"), FieldKey(field)], debugDescription: what))
        }
        guard let code = data["c"] else {
            throw DecodingError.keyNotFound(
                FieldKey("c"), .init(codingPath: [FieldKey("data")], debugDescription: "an FCM message's data has no c")
            )
        }
        var server: InstanceID?
        if let s = data["s"] {
            guard let id = InstanceID(s) else { throw corrupted("s", "data.s is not an installation id") }
            server = id
        }
        var object: Int64?
        if let id = data["id"] {
            guard let number = Int64(id) else { throw corrupted("id", "data.id is not a number") }
            object = number
        }
        var values: [String: String]?
        if let text = data["d"] {
            guard let parsed = try? JSONDecoder().decode([String: String].self, from: Data(text.utf8)) else {
                throw corrupted("d", "data.d is not an object of strings")
            }
            values = parsed
        }
        self.init(
            aps: APS(
                alert: Alert(title: decoded.notification?.title ?? "", body: decoded.notification?.body),
                threadID: data["thread"]),
            appData: PushAppData(s: server, c: code, id: object, mv: data["mv"], d: values))
    }
}

/// A field's name in a decoding error's path.
private struct FieldKey: CodingKey {
    var stringValue: String
    var intValue: Int? { nil }
    init(_ name: String) { stringValue = name }
    init(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
}
