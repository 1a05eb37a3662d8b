//! From a URL to a configured object-store client and a path in it.

use std::sync::Arc;
use std::time::Duration;

use object_store::aws::AmazonS3Builder;
use object_store::azure::MicrosoftAzureBuilder;
use object_store::gcp::GoogleCloudStorageBuilder;
use object_store::http::HttpBuilder;
use object_store::path::Path;
use object_store::{BackoffConfig, ClientOptions, ObjectStore, RetryConfig};
use tessera_core::config::StorageConfig;
use tessera_core::error::{Error, Result};

/// A store and a path in it, with the URL they came from (for messages).
#[derive(Clone)]
pub struct ObjectLocation {
    /// The client, configured for the bucket or container.
    pub store: Arc<dyn ObjectStore>,
    /// The path inside the store (no leading `/`).
    pub path: Path,
    /// The URL as the user wrote it.
    pub url: String,
}

impl std::fmt::Debug for ObjectLocation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ObjectLocation({})", self.url)
    }
}

/// The schemes [`parse_url`] opens.
pub const SCHEMES: &str = "s3://, gs://, az:// (abfs://), http://, https://";

/// Parses `url` into a client for its bucket or container and the path in it, configured
/// from the environment and config `storage.*`.
///
/// # Errors
/// [`Error::Invalid`] for a URL without a bucket or with another scheme (naming those
/// supported); [`Error::Config`] for invalid `storage.*` values; [`Error::Storage`] when
/// the provider's client cannot be built (its message names what is missing).
pub fn parse_url(url: &str) -> Result<ObjectLocation> {
    let (scheme, rest) = url.split_once("://").ok_or_else(|| {
        Error::invalid(
            "object store",
            format!("'{url}' is not a URL; object stores are {SCHEMES}"),
        )
    })?;
    let cfg = tessera_core::config::storage()?;
    let (bucket, key) = rest.split_once('/').unwrap_or((rest, ""));
    if bucket.is_empty() {
        return Err(Error::invalid(
            "object store",
            format!("'{url}' names no bucket or container"),
        ));
    }
    let retry = retry_config(&cfg);
    let client = client_options(&cfg);
    let built: std::result::Result<Arc<dyn ObjectStore>, object_store::Error> = match scheme {
        "s3" | "s3a" => {
            let mut b = AmazonS3Builder::from_env()
                .with_bucket_name(bucket)
                .with_retry(retry)
                .with_client_options(client);
            if let Some(e) = &cfg.endpoint {
                b = b.with_endpoint(e);
            } else if let Ok(e) = std::env::var("AWS_ENDPOINT_URL") {
                b = b.with_endpoint(e);
            }
            match (
                &cfg.region,
                std::env::var("AWS_REGION").or_else(|_| std::env::var("AWS_DEFAULT_REGION")),
            ) {
                (Some(r), _) => b = b.with_region(r),
                (None, Ok(r)) => b = b.with_region(r),
                (None, Err(_)) => b = b.with_region("us-east-1"),
            }
            b.build().map(|s| Arc::new(s) as Arc<dyn ObjectStore>)
        }
        "gs" | "gcs" => GoogleCloudStorageBuilder::from_env()
            .with_bucket_name(bucket)
            .with_retry(retry)
            .with_client_options(client)
            .build()
            .map(|s| Arc::new(s) as Arc<dyn ObjectStore>),
        "az" | "azure" | "abfs" | "abfss" => {
            let mut b = MicrosoftAzureBuilder::from_env()
                .with_container_name(bucket)
                .with_retry(retry)
                .with_client_options(client);
            if let Some(e) = &cfg.endpoint {
                b = b.with_endpoint(e.clone());
            }
            b.build().map(|s| Arc::new(s) as Arc<dyn ObjectStore>)
        }
        "http" | "https" => HttpBuilder::new()
            .with_url(format!("{scheme}://{bucket}"))
            .with_retry(retry)
            .with_client_options(client)
            .build()
            .map(|s| Arc::new(s) as Arc<dyn ObjectStore>),
        other => {
            return Err(Error::invalid(
                "object store",
                format!(
                    "'{url}': {other}:// is not an object store tessera opens; it opens {SCHEMES}"
                ),
            ))
        }
    };
    let store = built.map_err(|e| Error::Storage {
        location: url.to_string(),
        detail: format!("cannot set up the client: {e}"),
    })?;
    let path = Path::parse(key.trim_matches('/')).map_err(|e| {
        Error::invalid(
            "object store",
            format!("'{url}': the path is not valid: {e}"),
        )
    })?;
    Ok(ObjectLocation {
        store,
        path,
        url: url.to_string(),
    })
}

fn retry_config(cfg: &StorageConfig) -> RetryConfig {
    RetryConfig {
        backoff: BackoffConfig {
            init_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_secs(15),
            base: 2.0,
        },
        max_retries: cfg.retries as usize,
        retry_timeout: cfg.timeout * (cfg.retries + 1),
    }
}

fn client_options(cfg: &StorageConfig) -> ClientOptions {
    let env_http = std::env::var("AWS_ALLOW_HTTP").is_ok_and(|v| v.eq_ignore_ascii_case("true"));
    ClientOptions::new()
        .with_allow_http(cfg.allow_http || env_http)
        .with_timeout(cfg.timeout)
        .with_connect_timeout(cfg.timeout.min(Duration::from_secs(5)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_name_a_bucket_and_a_path() {
        let l = parse_url("s3://bucket/a/b.zarr/").unwrap();
        assert_eq!(l.path.as_ref(), "a/b.zarr");
        let err = parse_url("s3:///x").unwrap_err().to_string();
        assert!(err.contains("names no bucket"), "{err}");
        let err = parse_url("ftp://host/x").unwrap_err().to_string();
        assert!(
            err.contains("ftp:// is not an object store") && err.contains("s3://"),
            "{err}"
        );
        let err = parse_url("/local/path").unwrap_err().to_string();
        assert!(err.contains("is not a URL"), "{err}");
    }
}
