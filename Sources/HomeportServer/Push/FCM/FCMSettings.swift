import Foundation
import HomeportCrypto

/// How this process sends to Firebase Cloud Messaging (HTTP v1): the Google service account
/// whose key signs the assertion that buys an access token, and the host.
package struct FCMSettings: Sendable {
    /// The Firebase project (`project_id`).
    package var projectID: String
    /// The service account's address (`client_email`): the assertion's issuer.
    package var clientEmail: String
    /// The key's id (`private_key_id`), the assertion's `kid` when given.
    package var privateKeyID: String?
    /// The service account's RSA key as PEM (`private_key`); never logged.
    package var privateKeyPEM: String
    /// Where the assertion is exchanged for an access token (`token_uri`).
    package var tokenURI: String
    /// FCM's base URL (`https://fcm.googleapis.com`; a stand-in's in tests).
    package var baseURL: String
    /// Longest wait for one answer, in seconds.
    package var timeoutSeconds: Int

    /// Creates settings.
    package init(
        projectID: String, clientEmail: String, privateKeyID: String? = nil, privateKeyPEM: String, tokenURI: String,
        baseURL: String = "https://fcm.googleapis.com", timeoutSeconds: Int = 10
    ) {
        self.projectID = projectID
        self.clientEmail = clientEmail
        self.privateKeyID = privateKeyID
        self.privateKeyPEM = privateKeyPEM
        self.tokenURI = tokenURI
        self.baseURL = baseURL
        self.timeoutSeconds = timeoutSeconds
    }

    /// The settings of the service-account JSON file at `path` (as Google's console downloads
    /// it). Throws ``ConfigurationError`` naming what is missing or wrong: a file others may
    /// read, a field missing, a key that is not RSA, a `token_uri` that is not HTTPS.
    package static func serviceAccount(fromFile path: String) throws -> FCMSettings {
        let data = try PrivateFile.read(path, what: "FCM service-account file", create: nil)
        guard let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else {
            throw ConfigurationError("the FCM service-account file \(path) is not a JSON object")
        }
        func field(_ name: String) throws -> String {
            guard let value = object[name] as? String, !value.isEmpty else {
                throw ConfigurationError("the FCM service-account file \(path) has no \(name)")
            }
            return value
        }
        let settings = FCMSettings(
            projectID: try field("project_id"), clientEmail: try field("client_email"),
            privateKeyID: object["private_key_id"] as? String, privateKeyPEM: try field("private_key"),
            tokenURI: try field("token_uri"))
        guard settings.projectID.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "/") }) else {
            throw ConfigurationError("the FCM service-account file \(path) has a project_id that is not a name")
        }
        guard PushGatewaySettings.isAllowedURL(settings.tokenURI.split(separator: "?").first.map(String.init) ?? "")
        else {
            throw ConfigurationError("the FCM service-account file \(path) has a token_uri that is not https://")
        }
        do {
            _ = try RSAPrivateKey(pem: settings.privateKeyPEM)
        } catch {
            throw ConfigurationError("the FCM service-account file \(path) holds no usable private_key: \(error)")
        }
        return settings
    }

    /// Whether `text` can be a Firebase project id: 6–30 lowercase letters, digits and `-`,
    /// starting with a letter.
    package static func isProjectID(_ text: String) -> Bool {
        (6...30).contains(text.utf8.count) && text.utf8.first.map { (0x61...0x7A).contains($0) } == true
            && text.utf8.allSatisfy { (0x61...0x7A).contains($0) || (0x30...0x39).contains($0) || $0 == 0x2D }
    }
}
