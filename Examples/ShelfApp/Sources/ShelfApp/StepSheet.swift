import HomeportClient
import HomeportWire
import ShelfKit
import SwiftUI

/// Adding a server, step by step: its address; what it says it is (before any password); the
/// sign-in or the account; then a second factor, a mailed code, or the wait for approval.
struct StepSheet: View {
    let shelf: Shelf
    @Environment(\.dismiss) private var dismiss
    @State private var address = ""
    @State private var email = ""
    @State private var password = ""
    @State private var code = ""

    var body: some View {
        NavigationStack {
            Form {
                switch shelf.step {
                case .preview(let preview):
                    previewed(preview)
                case .secondFactor:
                    codeSection("The code of your authenticator app (or a recovery code)")
                case .emailCode(let pending):
                    codeSection("The code sent to \(pending.email)")
                case .waiting(let standing):
                    Section {
                        switch standing {
                        case .held: Text("Your account is held by the library's operator.")
                        case .mailFailed: Text("The library could not send you mail. Try again later.")
                        case .waiting, nil: Text("Your account waits for the library's operator to approve it.")
                        }
                    }
                case nil:
                    Section("The library's address") {
                        TextField("https://books.example.net", text: $address)
                            .autocorrectionDisabled()
                        Button("Look it up") { Task { await shelf.lookUp(address) } }
                            .disabled(address.isEmpty)
                    }
                }
            }
            .navigationTitle("Add a library")
            .toolbar {
                ToolbarItem(placement: .cancellationAction) {
                    // Closing the sheet cancels the step too (ShelfView's binding).
                    Button("Cancel") { dismiss() }
                }
            }
        }
    }

    /// What the server said it is, and the ways on from there.
    @ViewBuilder
    private func previewed(_ preview: ServerPreview) -> some View {
        Section("This is") {
            LabeledContent("Product", value: preview.identity.product)
            LabeledContent("Installation", value: String(preview.identity.instanceId.description.prefix(8)))
            if let key = preview.keyFingerprint { LabeledContent("Key", value: key) }
            LabeledContent("Address", value: preview.address.url)
        }
        Section("Your account there") {
            TextField("Email", text: $email)
                .textContentType(.username)
            SecureField("Password", text: $password)
                .textContentType(.password)
            Button("Sign in") { signIn(creatingAccount: false) }
                .disabled(email.isEmpty || password.isEmpty)
            Button("Create an account") { signIn(creatingAccount: true) }
                .disabled(email.isEmpty || password.isEmpty)
        }
        Section {
            Button("Keep it without signing in") { Task { await shelf.keepPreviewed() } }
        }
    }

    private func codeSection(_ prompt: String) -> some View {
        Section(prompt) {
            TextField("123456", text: $code)
                .textContentType(.oneTimeCode)
            Button("Continue") {
                let typed = code
                code = ""
                Task { await shelf.submit(code: typed) }
            }
            .disabled(code.isEmpty)
        }
    }

    private func signIn(creatingAccount: Bool) {
        let typed = password
        password = ""
        Task { await shelf.signIn(email: email, password: typed, creatingAccount: creatingAccount) }
    }
}
