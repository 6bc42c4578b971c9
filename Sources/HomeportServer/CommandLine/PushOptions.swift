import Foundation
import HomeportAPNs
import HomeportCommandLine
import HomeportCrypto
import HomeportWire

/// The push options `serve` and `push send` share, and how they become ``PushSettings``.
package enum PushOptions {
    static let catalogue = CommandSpec.Option.value(
        "catalogue", "FILE",
        help: "Notification codes to add: {\"codes\": [{\"code\": \"ns:name\", \"title\": \"…\"}]}.",
        environment: "HOMEPORT_CATALOGUE")
    package static let pushKey = CommandSpec.Option.value(
        "push-key", "NAME", help: "Key of the payload's app-data block (a product names its own, e.g. officer).",
        environment: "HOMEPORT_PUSH_KEY", default: "homeport")
    package static let topic = CommandSpec.Option.value(
        "apns-topic", "BUNDLE_ID", help: "The app's bundle id; with it, notifications queue pushes.",
        environment: "HOMEPORT_APNS_TOPIC")

    static let devicesPerAccount = CommandSpec.Option.value(
        "max-devices-per-account", "N",
        help:
            "Devices one account keeps registered; one more removes its least recently registered. A notification goes to at most this many.",
        environment: "HOMEPORT_MAX_DEVICES_PER_ACCOUNT", default: "20")

    /// The APNs key options, which `serve` and `gateway serve` share.
    package static let apnsKey: [CommandSpec.Option] = [
        .value(
            "apns-key-file", "FILE", help: "The APNs auth key (.p8) of the developer account; read once, never logged.",
            environment: "HOMEPORT_APNS_KEY_FILE"),
        .value("apns-key-id", "ID", help: "The auth key's id (10 characters).", environment: "HOMEPORT_APNS_KEY_ID"),
        .value(
            "apns-team-id", "ID", help: "The developer team's id (10 characters).", environment: "HOMEPORT_APNS_TEAM_ID"
        ),
        .value(
            "apns-base-url", "URL", help: "Send every push here instead of Apple's production and sandbox hosts.",
            environment: "HOMEPORT_APNS_BASE_URL", default: "Apple's hosts, by each device's environment"),
        .value(
            "apns-ca-file", "FILE", help: "A CA to trust besides the system's (a test or mirror endpoint).",
            environment: "HOMEPORT_APNS_CA_FILE"),
    ]

    /// The push gateway options of `serve`.
    static let gateway: [CommandSpec.Option] = [
        .value(
            "push-gateway", "URL",
            help:
                "Send pushes through this push gateway (homeport-server gateway serve) instead of APNs: https://, or http:// on loopback.",
            environment: "HOMEPORT_PUSH_GATEWAY"),
        .value(
            "push-gateway-credential-file", "FILE",
            help:
                "This installation's credential for the gateway: made there (mode 0600) when missing, read once, never logged.",
            environment: "HOMEPORT_PUSH_GATEWAY_CREDENTIAL_FILE"),
        .value(
            "push-gateway-ca-file", "FILE", help: "The CA to trust for the gateway, instead of the system's.",
            environment: "HOMEPORT_PUSH_GATEWAY_CA_FILE"),
        .value(
            "push-gateway-webpush-key", "KEY",
            help:
                "The gateway's VAPID public key (its operator prints it with 'push vapid-key'): Web Push subscriptions are made with it and their pushes go through the gateway.",
            environment: "HOMEPORT_PUSH_GATEWAY_WEBPUSH_KEY"),
        .value(
            "push-gateway-fcm-project", "PROJECT",
            help: "The Firebase project of the gateway's app: FCM registrations are taken and go through the gateway.",
            environment: "HOMEPORT_PUSH_GATEWAY_FCM_PROJECT"),
    ]

    /// The Web Push options of `serve` and `gateway serve`.
    package static let webPush: [CommandSpec.Option] = [
        .value(
            "vapid-key-file", "FILE",
            help:
                "Send Web Pushes (browsers, UnifiedPush) signed with this VAPID key (P-256 PEM): made there (mode 0600) when missing, read once, never logged.",
            environment: "HOMEPORT_VAPID_KEY_FILE"),
        .value(
            "vapid-subject", "CONTACT",
            help:
                "Who runs this server, for the push services: mailto:ADDRESS or an https:// URL (needs --vapid-key-file).",
            environment: "HOMEPORT_VAPID_SUBJECT"),
        .value(
            "webpush-ca-file", "FILE",
            help:
                "PEM certificates to trust besides the system's for push services: a UnifiedPush distributor with a CA of its own (needs --vapid-key-file).",
            environment: "HOMEPORT_WEBPUSH_CA_FILE"),
        .flag(
            "webpush-allow-private-endpoints",
            help:
                "Also take Web Push endpoints on this machine or a private network, plain http:// there too (a UnifiedPush distributor on the household's network; link-local addresses never); otherwise only public https:// push services.",
            environment: "HOMEPORT_WEBPUSH_ALLOW_PRIVATE_ENDPOINTS"),
    ]

    /// The FCM options of `serve` and `gateway serve`.
    package static let fcm: [CommandSpec.Option] = [
        .value(
            "fcm-service-account-file", "FILE",
            help:
                "Send to Android apps through Firebase Cloud Messaging with this Google service account (its JSON key file, mode 0600): read once, never logged.",
            environment: "HOMEPORT_FCM_SERVICE_ACCOUNT_FILE"),
        .value(
            "fcm-base-url", "URL",
            help: "Send FCM messages there instead of https://fcm.googleapis.com (a test endpoint).",
            environment: "HOMEPORT_FCM_BASE_URL"),
    ]

    /// The options of `serve` (the sender's too).
    static let all: [CommandSpec.Option] =
        [catalogue, pushKey, topic, devicesPerAccount] + apnsKey + gateway + webPush + fcm

    /// The settings the command line asks for. `sender` reads the APNs key options too (`serve`).
    static func settings(
        _ parsed: ParsedArguments, _ spec: CommandSpec, _ environment: [String: String], sender: Bool
    ) throws -> PushSettings {
        var settings = PushSettings()
        if let key = try appDataKey(parsed, spec, environment) { settings.appDataKey = key }
        if let file = parsed.value("catalogue", spec: spec, environment: environment) {
            do {
                settings.extraCodes = try ServerCatalogue.codes(fromFile: file)
            } catch let error as ConfigurationError {
                throw UsageError(error.description)
            }
        }
        if let topic = parsed.value("apns-topic", spec: spec, environment: environment) {
            guard isBundleID(topic) else {
                throw UsageError("--apns-topic must be the app's bundle id, such as net.example.books, not '\(topic)'")
            }
            settings.topic = topic
        }
        if let count = try ServerCLI.integer("max-devices-per-account", parsed, spec, environment, range: 1...100_000) {
            settings.maxDevicesPerAccount = count
        }
        if sender {
            settings.apns = try apns(parsed, spec, environment, topic: settings.topic)
            settings.gateway = try gateway(parsed, spec, environment, topic: settings.topic)
            if settings.apns != nil && settings.gateway != nil {
                throw UsageError(
                    "--push-gateway sends pushes through the gateway, which holds the APNs key: give it or --apns-key-file, not both"
                )
            }
            if let web = try webPush(parsed, spec, environment) {
                if settings.gateway?.webPushKey != nil {
                    throw UsageError(
                        "Web Pushes go through the gateway (--push-gateway-webpush-key) or with this server's key (--vapid-key-file), not both"
                    )
                }
                try settings.enableWebPush(web)
            }
            if let android = try fcm(parsed, spec, environment) {
                if settings.gateway?.fcmProject != nil {
                    throw UsageError(
                        "FCM pushes go through the gateway (--push-gateway-fcm-project) or with this server's service account (--fcm-service-account-file), not both"
                    )
                }
                settings.enableFCM(android)
            }
            if let gateway = settings.gateway { settings.sendThrough(gateway) }
        }
        return settings
    }

    /// The FCM settings: the service account (and a base URL for tests), or none.
    package static func fcm(_ parsed: ParsedArguments, _ spec: CommandSpec, _ environment: [String: String]) throws
        -> FCMSettings?
    {
        let file = parsed.value("fcm-service-account-file", spec: spec, environment: environment)
        let base = parsed.value("fcm-base-url", spec: spec, environment: environment)
        guard let file else {
            if base != nil { throw UsageError("--fcm-base-url needs --fcm-service-account-file") }
            return nil
        }
        var settings: FCMSettings
        do {
            settings = try FCMSettings.serviceAccount(fromFile: file)
        } catch let error as ConfigurationError {
            throw UsageError(error.description)
        }
        if let base {
            guard PushGatewaySettings.isAllowedURL(base) else {
                throw UsageError(
                    "--fcm-base-url must be https:// (or http:// on a loopback address), not '\(base.prefix(200))'")
            }
            settings.baseURL = base.hasSuffix("/") ? String(base.dropLast()) : base
        }
        return settings
    }

    /// The Web Push settings: the VAPID key file and the subject, or none. The private-endpoints
    /// switch is read first, so that a bad word in its variable is refused with or without them.
    package static func webPush(_ parsed: ParsedArguments, _ spec: CommandSpec, _ environment: [String: String])
        throws -> WebPushSettings?
    {
        let allowPrivate = try parsed.flag("webpush-allow-private-endpoints", spec: spec, environment: environment)
        let file = parsed.value("vapid-key-file", spec: spec, environment: environment)
        let subject = parsed.value("vapid-subject", spec: spec, environment: environment)
        let ca = parsed.value("webpush-ca-file", spec: spec, environment: environment)
        guard let file else {
            if subject != nil { throw UsageError("--vapid-subject needs --vapid-key-file") }
            if ca != nil { throw UsageError("--webpush-ca-file needs --vapid-key-file") }
            return nil
        }
        guard let subject else {
            throw UsageError("--vapid-key-file needs --vapid-subject, such as mailto:admin@example.net")
        }
        guard WebPushSettings.isAllowedSubject(subject) else {
            throw UsageError("--vapid-subject is mailto:ADDRESS or an https:// URL, not '\(subject.prefix(200))'")
        }
        do {
            var settings = WebPushSettings(keyPEM: try WebPushSettings.key(fromFile: file), subject: subject)
            settings.allowPrivateEndpoints = allowPrivate
            if let ca {
                guard let pem = try? String(contentsOfFile: ca, encoding: .utf8),
                    pem.contains("-----BEGIN CERTIFICATE-----")
                else { throw UsageError("--webpush-ca-file \(ca) is not a readable PEM file of certificates") }
                settings.extraCA = pem
            }
            return settings
        } catch let error as ConfigurationError {
            throw UsageError(error.description)
        }
    }

    /// `--push-key`, checked; `nil` when not given.
    package static func appDataKey(_ parsed: ParsedArguments, _ spec: CommandSpec, _ environment: [String: String])
        throws
        -> String?
    {
        guard let key = parsed.value("push-key", spec: spec, environment: environment) else { return nil }
        guard PushSettings.validateAppDataKey(key) else {
            throw UsageError("--push-key must be 1–32 letters, digits, '_' or '-' (and not 'aps'), not '\(key)'")
        }
        return key
    }

    /// The push gateway settings: the URL and the credential file (and the topic), or none.
    private static func gateway(
        _ parsed: ParsedArguments, _ spec: CommandSpec, _ environment: [String: String], topic: String?
    ) throws -> PushGatewaySettings? {
        let url = parsed.value("push-gateway", spec: spec, environment: environment)
        let file = parsed.value("push-gateway-credential-file", spec: spec, environment: environment)
        let ca = parsed.value("push-gateway-ca-file", spec: spec, environment: environment)
        let webPushKey = parsed.value("push-gateway-webpush-key", spec: spec, environment: environment)
        let fcmProject = parsed.value("push-gateway-fcm-project", spec: spec, environment: environment)
        guard let url else {
            if file != nil || ca != nil || webPushKey != nil || fcmProject != nil {
                throw UsageError(
                    "--push-gateway-credential-file, --push-gateway-ca-file, --push-gateway-webpush-key and --push-gateway-fcm-project need --push-gateway"
                )
            }
            return nil
        }
        if let webPushKey, WebPushSubscription.publicKey(webPushKey) == nil {
            throw UsageError(
                "--push-gateway-webpush-key is the gateway's VAPID public key (a P-256 point, base64url), not '\(webPushKey.prefix(100))'"
            )
        }
        if let fcmProject, !FCMSettings.isProjectID(fcmProject) {
            throw UsageError(
                "--push-gateway-fcm-project is a Firebase project id (6–30 of a-z 0-9 -), not '\(fcmProject.prefix(100))'"
            )
        }
        guard PushGatewaySettings.isAllowedURL(url) else {
            throw UsageError(
                "--push-gateway must be an https:// URL (or http:// on a loopback address), not '\(url.prefix(200))'")
        }
        guard let file else { throw UsageError("--push-gateway needs --push-gateway-credential-file") }
        guard topic != nil else {
            throw UsageError("--push-gateway needs --apns-topic, the app's bundle id the gateway serves")
        }
        let credential: String
        do {
            credential = try PushGatewaySettings.credential(fromFile: file)
        } catch let error as ConfigurationError {
            throw UsageError(error.description)
        }
        if let ca {
            guard FileManager.default.isReadableFile(atPath: ca) else {
                throw UsageError("cannot read the CA file \(ca)")
            }
        }
        var settings = PushGatewaySettings(
            url: url, credential: credential, caFile: ca,
            webPushKey: webPushKey.flatMap(WebPushSubscription.publicKey).map(IdentityProof.base64URL),
            fcmProject: fcmProject)
        settings.allowPrivateWebPushEndpoints = try parsed.flag(
            "webpush-allow-private-endpoints", spec: spec, environment: environment)
        return settings
    }

    /// The APNs key settings: all of key file, key id, team id and topic, or none.
    package static func apns(
        _ parsed: ParsedArguments, _ spec: CommandSpec, _ environment: [String: String], topic: String?
    ) throws -> APNsSettings? {
        let file = parsed.value("apns-key-file", spec: spec, environment: environment)
        let keyID = parsed.value("apns-key-id", spec: spec, environment: environment)
        let teamID = parsed.value("apns-team-id", spec: spec, environment: environment)
        // No key: this process sends nothing (pushes it queues wait for a replica with the key).
        if file == nil && keyID == nil && teamID == nil { return nil }
        let given = [
            ("--apns-key-file", file), ("--apns-key-id", keyID), ("--apns-team-id", teamID), ("--apns-topic", topic),
        ]
        let missing = given.filter { $0.1 == nil }.map(\.0)
        guard missing.isEmpty, let file, let keyID, let teamID else {
            throw UsageError(
                "sending pushes needs all of --apns-key-file, --apns-key-id, --apns-team-id and --apns-topic; missing "
                    + missing.joined(separator: ", "))
        }
        guard ProviderToken.isAppleID(keyID) else {
            throw UsageError(
                "--apns-key-id is the key's 10-character id (letters and digits), not '\(keyID.prefix(40))'")
        }
        guard ProviderToken.isAppleID(teamID) else {
            throw UsageError(
                "--apns-team-id is the 10-character team id (letters and digits), not '\(teamID.prefix(40))'")
        }
        let pem: String
        do {
            pem = try String(contentsOfFile: file, encoding: .utf8)
        } catch {
            throw UsageError("cannot read the APNs key file \(file): \(error.localizedDescription)")
        }
        do {
            _ = try ES256Key(pem: pem)
        } catch {
            throw UsageError("the APNs key file \(file) cannot be used: \(error)")
        }
        var client = APNsClient.Configuration()
        if let base = parsed.value("apns-base-url", spec: spec, environment: environment) {
            guard base.hasPrefix("https://") else {
                throw UsageError("--apns-base-url must start with https:// (APNs is HTTP/2 over TLS), not '\(base)'")
            }
            client.productionURL = base
            client.sandboxURL = base
        }
        if let ca = parsed.value("apns-ca-file", spec: spec, environment: environment) {
            guard FileManager.default.isReadableFile(atPath: ca) else {
                throw UsageError("cannot read the CA file \(ca)")
            }
            client.caFile = ca
        }
        return APNsSettings(keyPEM: pem, keyID: keyID, teamID: teamID, client: client)
    }

    /// A reverse-DNS bundle id: 3–155 characters of letters, digits, `.` and `-`, with a dot.
    package static func isBundleID(_ text: String) -> Bool {
        (3...155).contains(text.utf8.count) && text.contains(".") && !text.hasPrefix(".") && !text.hasSuffix(".")
            && text.utf8.allSatisfy {
                (UInt8(ascii: "a")...UInt8(ascii: "z")).contains($0)
                    || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains($0)
                    || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) || $0 == UInt8(ascii: ".")
                    || $0 == UInt8(ascii: "-")
            }
    }
}
