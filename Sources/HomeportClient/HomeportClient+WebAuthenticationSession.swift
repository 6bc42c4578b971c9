#if canImport(AuthenticationServices)
    import AuthenticationServices
    import Foundation

    extension HomeportClient {
        /// Signs in through the system browser: asks the server at `address` for a handoff that
        /// comes back to `callbackScheme` (the app's reverse-domain scheme, such as
        /// `com.example.books`, registered in its Info.plist), shows the page in an
        /// `ASWebAuthenticationSession` where the person signs in by any means the server offers
        /// (a password, a second factor, the household's identity provider) and confirms this
        /// device, then exchanges the code as ``completeBrowserSignIn(_:callbackURL:)`` does.
        ///
        /// - Parameters:
        ///   - deviceName: what the server's confirmation page calls this device ("Ada's iPhone").
        ///   - presentationContextProvider: the window the browser sheet is shown over.
        ///   - ephemeral: `true` shares no cookies with Safari (the person signs in afresh).
        /// - Throws: `CancellationError` when the person closes the sheet; what
        ///   ``beginBrowserSignIn(at:redirect:deviceName:)`` and
        ///   ``completeBrowserSignIn(_:callbackURL:)`` throw otherwise.
        @MainActor
        public func signInInBrowser(
            at address: ServerAddress, callbackScheme: String, deviceName: String,
            presentationContextProvider: any ASWebAuthenticationPresentationContextProviding,
            ephemeral: Bool = false
        ) async throws -> SignInResult {
            let pending = try await beginBrowserSignIn(
                at: address, redirect: callbackScheme + ":/homeport-signed-in", deviceName: deviceName)
            guard let page = URL(string: pending.url) else {
                throw ClientError.badAnswer(address: address.url, detail: "the handoff's page is not a URL")
            }
            let callback = try await Self.browse(
                page, callbackScheme: callbackScheme, presentationContextProvider: presentationContextProvider,
                ephemeral: ephemeral)
            return try await completeBrowserSignIn(pending, callbackURL: callback.absoluteString)
        }

        /// Shows `page` in an `ASWebAuthenticationSession` and returns the URL it comes back to.
        @MainActor
        static func browse(
            _ page: URL, callbackScheme: String,
            presentationContextProvider: any ASWebAuthenticationPresentationContextProviding, ephemeral: Bool
        ) async throws -> URL {
            let once = ResumeOnce<URL>()
            let session = ASWebAuthenticationSession(url: page, callbackURLScheme: callbackScheme) { callback, error in
                if let callback {
                    once.resume(with: .success(callback))
                } else if let error = error as? ASWebAuthenticationSessionError, error.code == .canceledLogin {
                    once.resume(with: .failure(CancellationError()))
                } else {
                    let failure: any Error =
                        error ?? ClientError.invalidInput("the browser sign-in ended without coming back")
                    once.resume(with: .failure(failure))
                }
            }
            session.presentationContextProvider = presentationContextProvider
            session.prefersEphemeralWebBrowserSession = ephemeral
            guard session.start() else {
                throw ClientError.invalidInput("the system browser could not be opened for the sign-in")
            }
            let callback = try await withCheckedThrowingContinuation { once.attach($0) }
            // The session must live until it has come back (nothing else holds it).
            withExtendedLifetime(session) {}
            return callback
        }
    }
#endif
