package nitro

import (
	"context"
	"errors"
	"net"
	"strings"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/smithy-go"

	"conduit/internal/enclaves/provider"
)

// transientCodes are AWS error codes that a later attempt can get past: throttling, AWS's own
// failures, and EC2 capacity, which comes back as other customers release it. The SDK already
// retried these a few times with backoff; the lifecycle retries further.
var transientCodes = map[string]bool{
	"Throttling": true, "ThrottlingException": true, "RequestLimitExceeded": true, "RequestThrottled": true,
	"RequestThrottledException": true, "TooManyRequestsException": true, "SlowDown": true,
	"ServiceUnavailable": true, "ServiceUnavailableException": true, "Unavailable": true,
	"InternalError": true, "InternalFailure": true, "InternalServerError": true, "RequestTimeout": true,
	"RequestTimeoutException": true, "RequestExpired": true,
	"InsufficientInstanceCapacity": true, "InsufficientHostCapacity": true, "InsufficientCapacity": true,
}

// permanentPrefixes: requests that are wrong as configured, or refused, and stay so until a person
// changes something — a bad AMI, subnet or security group, missing permissions, a quota.
var permanentPrefixes = []string{
	"InvalidAMIID", "InvalidSubnetID", "InvalidGroup", "InvalidParameter", "InvalidInstanceType",
	"UnauthorizedOperation", "AuthFailure", "AccessDenied", "OptInRequired", "Blocked",
	"InstanceLimitExceeded", "VcpuLimitExceeded", "MaxSpotInstanceCountExceeded", "IdempotentParameterMismatch",
	"Unsupported", "InvalidClientTokenId", "SignatureDoesNotMatch", "NoSuchBucket", "MissingParameter",
}

// classify sorts an AWS SDK error (docs/enclaves.md has the table):
//   - throttling, AWS's 5xx, capacity shortages, timeouts, refused or broken connections, a
//     cancelled call: transient;
//   - a request AWS says is wrong or not allowed (bad AMI, subnet, group or instance type,
//     permissions, quotas, a client token reused with other parameters): permanent;
//   - any other error code: by HTTP status, 5xx transient, 4xx permanent.
func classify(op, id string, err error) error {
	if err == nil {
		return nil
	}
	var e *provider.Error
	if errors.As(err, &e) {
		return err
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return provider.Wrap(provider.Transient, op, id, err)
	}
	var api smithy.APIError
	if errors.As(err, &api) {
		code := api.ErrorCode()
		if transientCodes[code] {
			return provider.Wrap(provider.Transient, op, id, err)
		}
		for _, p := range permanentPrefixes {
			if strings.HasPrefix(code, p) {
				return provider.Wrap(provider.Permanent, op, id, err)
			}
		}
		var re *awshttp.ResponseError
		if errors.As(err, &re) && re.HTTPStatusCode() >= 400 && re.HTTPStatusCode() < 500 && re.HTTPStatusCode() != 429 {
			return provider.Wrap(provider.Permanent, op, id, err)
		}
		return provider.Wrap(provider.Transient, op, id, err)
	}
	var ne net.Error
	if errors.As(err, &ne) {
		return provider.Wrap(provider.Transient, op, id, err)
	}
	var re *awshttp.ResponseError
	if errors.As(err, &re) && re.HTTPStatusCode() >= 400 && re.HTTPStatusCode() < 500 && re.HTTPStatusCode() != 429 {
		return provider.Wrap(provider.Permanent, op, id, err)
	}
	return provider.Wrap(provider.Transient, op, id, err)
}

// apiCode is err's AWS error code, or "".
func apiCode(err error) string {
	var api smithy.APIError
	if errors.As(err, &api) {
		return api.ErrorCode()
	}
	return ""
}
