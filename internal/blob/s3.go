package blob

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
)

// S3Config configures the S3 backend.
type S3Config struct {
	Bucket string
	// Prefix is prepended to every key ("media/").
	Prefix string
	Region string
	// Endpoint is an S3-compatible endpoint (MinIO, R2, …); empty: AWS.
	Endpoint  string
	PathStyle bool
	// Static credentials; empty uses the default AWS credential chain.
	AccessKeyID, SecretAccessKey string
}

// S3 keeps files in a bucket.
type S3 struct {
	client  *s3.Client
	presign *s3.PresignClient
	bucket  string
	prefix  string
}

// NewS3 builds the client; it does not call the bucket.
func NewS3(ctx context.Context, cfg S3Config) (*S3, error) {
	if cfg.Bucket == "" {
		return nil, errors.New("the s3 blob store needs a bucket")
	}
	opts := []func(*awsconfig.LoadOptions) error{awsconfig.WithRegion(cfg.Region)}
	if cfg.AccessKeyID != "" {
		opts = append(opts, awsconfig.WithCredentialsProvider(credentials.NewStaticCredentialsProvider(cfg.AccessKeyID, cfg.SecretAccessKey, "")))
	}
	awsCfg, err := awsconfig.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, err
	}
	client := s3.NewFromConfig(awsCfg, func(o *s3.Options) {
		if cfg.Endpoint != "" {
			o.BaseEndpoint = aws.String(cfg.Endpoint)
		}
		o.UsePathStyle = cfg.PathStyle
	})
	return &S3{client: client, presign: s3.NewPresignClient(client), bucket: cfg.Bucket, prefix: cfg.Prefix}, nil
}

func (s *S3) objectKey(key string) (string, error) {
	if err := ValidKey(key); err != nil {
		return "", err
	}
	return s.prefix + key, nil
}

// Put spools the body to a temporary file first: PutObject needs the
// length, and renders are files on disk anyway.
func (s *S3) Put(ctx context.Context, key, contentType string, body io.Reader) (Object, error) {
	k, err := s.objectKey(key)
	if err != nil {
		return Object{}, err
	}
	tmp, err := os.CreateTemp("", "blob-put-")
	if err != nil {
		return Object{}, err
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()
	n, err := io.Copy(tmp, body)
	if err != nil {
		return Object{}, err
	}
	if _, err := tmp.Seek(0, io.SeekStart); err != nil {
		return Object{}, err
	}
	_, err = s.client.PutObject(ctx, &s3.PutObjectInput{
		Bucket: aws.String(s.bucket), Key: aws.String(k), Body: tmp,
		ContentLength: aws.Int64(n), ContentType: aws.String(contentType),
	})
	if err != nil {
		return Object{}, fmt.Errorf("s3 put %s: %w", k, err)
	}
	return Object{Key: key, ContentType: contentType, Size: n}, nil
}

// Get streams the object.
func (s *S3) Get(ctx context.Context, key string) (io.ReadCloser, Object, error) {
	k, err := s.objectKey(key)
	if err != nil {
		return nil, Object{}, err
	}
	out, err := s.client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(k)})
	if err != nil {
		return nil, Object{}, notFound(err)
	}
	return out.Body, Object{Key: key, ContentType: aws.ToString(out.ContentType), Size: aws.ToInt64(out.ContentLength)}, nil
}

// Stat heads the object.
func (s *S3) Stat(ctx context.Context, key string) (Object, error) {
	k, err := s.objectKey(key)
	if err != nil {
		return Object{}, err
	}
	out, err := s.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(k)})
	if err != nil {
		return Object{}, notFound(err)
	}
	return Object{Key: key, ContentType: aws.ToString(out.ContentType), Size: aws.ToInt64(out.ContentLength)}, nil
}

// Presign returns a presigned GET URL.
func (s *S3) Presign(ctx context.Context, key string, ttl time.Duration) (string, bool, error) {
	k, err := s.objectKey(key)
	if err != nil {
		return "", false, err
	}
	req, err := s.presign.PresignGetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(k)}, s3.WithPresignExpires(ttl))
	if err != nil {
		return "", false, err
	}
	return req.URL, true, nil
}

// Delete removes the object (S3 answers success for a missing key too).
func (s *S3) Delete(ctx context.Context, key string) error {
	k, err := s.objectKey(key)
	if err != nil {
		return err
	}
	if _, err := s.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(k)}); err != nil && notFound(err) != ErrNotFound {
		return fmt.Errorf("s3 delete %s: %w", k, err)
	}
	return nil
}

func notFound(err error) error {
	var nsk *types.NoSuchKey
	var nf *types.NotFound
	var api smithy.APIError
	if errors.As(err, &nsk) || errors.As(err, &nf) || (errors.As(err, &api) && (api.ErrorCode() == "NotFound" || api.ErrorCode() == "NoSuchKey")) {
		return ErrNotFound
	}
	return err
}
