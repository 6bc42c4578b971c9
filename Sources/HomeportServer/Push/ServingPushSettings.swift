import Foundation
import HomeportHTTP
import HomeportStorage

/// The push settings a serving process uses, as it records them in the database when it starts,
/// so that `homeport-server push send` notifies as the server would (the same topic, app-data
/// key, catalogue and device cap) without the operator repeating `serve`'s flags.
struct ServingPushSettings: Codable, Hashable, Sendable {
    var topic: String?
    var appDataKey: String
    var extraCodes: [CatalogueCode]
    var maxDevicesPerAccount: Int
    /// The VAPID public key, when the server takes Web Push subscriptions.
    var webPushKey: String?
    /// The Firebase project, when the server takes FCM registrations.
    var fcmProject: String?

    init(_ settings: PushSettings) {
        topic = settings.topic
        webPushKey = settings.webPushKey
        fcmProject = settings.fcmProject
        appDataKey = settings.appDataKey
        extraCodes = settings.extraCodes
        maxDevicesPerAccount = settings.maxDevicesPerAccount
    }

    /// The row's name in `serving_settings`.
    static let name = "push"

    /// Records `settings` (the last process to start wins: replicas serve with the same flags).
    static func record(_ settings: PushSettings, in db: any SQLExecutor, now: Int64) throws {
        let value = String(decoding: try HTTPResponse.encode(ServingPushSettings(settings)), as: UTF8.self)
        try db.execute(
            """
            INSERT INTO serving_settings (name, value, updated_at) VALUES ($1, $2, $3)
            ON CONFLICT (name) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at
            """, [.text(name), .text(value), .integer(now)])
    }

    /// What the last serving process recorded, if one did.
    static func recorded(in db: any SQLExecutor) throws -> ServingPushSettings? {
        guard
            let text = try db.execute("SELECT value FROM serving_settings WHERE name = $1", [.text(name)]).first?
                .string("value")
        else { return nil }
        return try? JSONDecoder().decode(ServingPushSettings.self, from: Data(text.utf8))
    }
}
