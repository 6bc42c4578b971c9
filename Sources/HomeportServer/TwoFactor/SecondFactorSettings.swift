import HomeportCrypto

/// What two-factor sign-in needs: the key that seals its secrets, and the name an authenticator
/// app shows beside the account.
package struct SecondFactorSettings: Sendable, Hashable {
    /// Seals TOTP secrets and unshown recovery codes; keys the recovery codes' hashes.
    package var key: SecretsKey
    /// The `issuer` of the `otpauth://` URL (the product's name).
    package var issuer: String

    /// Creates settings.
    package init(key: SecretsKey, issuer: String) {
        self.key = key
        self.issuer = issuer
    }
}
