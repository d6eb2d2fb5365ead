DROP TABLE identity_kernels;
