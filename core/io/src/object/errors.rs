//! Object-store failures as tessera errors that name the URL and say what to check.

use tessera_core::error::Error;

/// `e` (from a request for `url`) as an [`Error::Storage`] that says what went wrong in
/// the user's terms: a missing object, denied access (and where credentials come from),
/// an endpoint that cannot be reached (after the retries).
pub fn object_error(url: &str, e: &object_store::Error) -> Error {
    let detail = match e {
        object_store::Error::NotFound { .. } => "no such object".to_string(),
        object_store::Error::PermissionDenied { .. }
        | object_store::Error::Unauthenticated { .. } => {
            format!("access denied ({e}); check the credentials (AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY, GOOGLE_SERVICE_ACCOUNT, AZURE_STORAGE_ACCOUNT_KEY) and the bucket's policy")
        }
        _ => describe(&e.to_string()),
    };
    Error::Storage {
        location: url.to_string(),
        detail,
    }
}

/// A message from a store (possibly passed through zarrs as text) in the user's terms.
pub(crate) fn describe(message: &str) -> String {
    let lower = message.to_ascii_lowercase();
    if lower.contains("connection refused")
        || lower.contains("error sending request")
        || lower.contains("dns error")
        || lower.contains("connect") && (lower.contains("timed out") || lower.contains("timeout"))
    {
        format!("the endpoint cannot be reached (after the configured retries, `storage.retries`): {message}")
    } else if lower.contains("invalidaccesskeyid")
        || lower.contains("signaturedoesnotmatch")
        || lower.contains("accessdenied")
        || lower.contains("403 forbidden")
        || lower.contains("unauthenticated")
    {
        format!("access denied; check the credentials (AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY) and the bucket's policy: {message}")
    } else if lower.contains("nosuchbucket") {
        format!("the bucket does not exist: {message}")
    } else {
        message.to_string()
    }
}
