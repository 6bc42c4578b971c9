import Foundation
import HomeportServer
import HomeportWire

/// A notification an account was sent: what its in-app stream shows.
public struct TestNotification: Sendable, Hashable {
    /// Its number among the account's notifications (1, 2, …).
    public var seq: Int64
    /// Its catalogue code.
    public var code: String
    /// Its title.
    public var title: String
    /// Its body.
    public var body: String?
    /// The thread it joins.
    public var thread: String?
    /// The id of what it is about.
    public var objectID: Int64?
    /// The product's own values.
    public var data: [String: String]?
}

/// A push queued for one of an account's devices (never sent by a ``TestServer``).
public struct TestPush {
    /// The device it goes to.
    public var deviceToken: String
    /// The payload, as APNs would receive it.
    public var payload: [String: Any]
    /// The key the server wrote its app data under: the product's (`Product.pushAppDataKey`), or
    /// `homeport`.
    public var appDataKey: String = PushPayload.defaultAppDataKey

    /// The product's app data in the payload: `s` (the instance id), `c` (the code), `id`, `d`;
    /// under `key` when given, else under the key the server wrote it with (``appDataKey``).
    public func appData(key: String? = nil) -> [String: Any]? {
        payload[key ?? appDataKey] as? [String: Any]
    }
}

extension TestServer {
    /// The notifications `account` was sent, oldest first: what its stream shows.
    public func notifications(of account: TestAccount) throws -> [TestNotification] {
        try NotificationLog(application.database).after(userID: account.id, seq: 0, limit: 10_000).map {
            TestNotification(
                seq: $0.seq, code: $0.code, title: $0.title, body: $0.body, thread: $0.thread, objectID: $0.objectID,
                data: $0.data)
        }
    }

    /// Registers a device of `account` for pushes (an APNs token made up for it, in its session)
    /// and returns its token: from now on its notifications queue pushes (``pushes(to:)``).
    @discardableResult
    public func registerDevice(for account: TestAccount) throws -> String {
        let token = (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
        let answer = try request(
            .post, HomeportPath.pushDevices, as: account,
            body: try JSONEncoder().encode(PushDeviceRegistration(token: token, environment: .sandbox)),
            headers: [("Content-Type", "application/json")])
        guard (200..<300).contains(answer.status) else {
            throw TestServerError("registering a device answered \(answer.status): \(answer.text)")
        }
        return token
    }

    /// The pushes queued for `account`'s devices, oldest first.
    public func pushes(to account: TestAccount) throws -> [TestPush] {
        try application.database.execute(
            """
            SELECT o.device_token, o.payload FROM push_outbox o
            JOIN push_devices d ON d.token = o.device_token WHERE d.user_id = $1 ORDER BY o.id
            """, [.integer(account.id)]
        ).compactMap { row in
            guard let token = row.string("device_token"), let text = row.string("payload"),
                let payload = (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any]
            else { return nil }
            return TestPush(deviceToken: token, payload: payload, appDataKey: application.push.settings.appDataKey)
        }
    }
}
